"""SeamlessM4T UnitY VarianceAdaptor: predicted log-durations are rounded to integer frame counts and HardUpsampling sizes its output with `int(upsampled_seq_lens.max().item())`, then fills each row with `repeat_interleave(durations[b])`.

Source: facebookresearch/seamless_communication@05419775be4677dfbc82a4b4b9d99b0d7f91e5c0:src/seamless_communication/models/unity/length_regulator.py:20-224
Also: src/seamless_communication/models/unity/film.py (FiLM); fairseq2 v0.2
fairseq2/nn/padding.py (PaddingMask, to_padding_mask, apply_padding_mask) and
create_standard_layer_norm.
Kept: HardUpsampling (dtype guard, per-batch loop, tensor-valued slice end),
VariancePredictor, VarianceAdaptor verbatim, the PaddingMask object that the adaptor
reads and builds.
Simplified: fairseq2's Linear/LayerNorm are torch.nn's; sizes shrunk (embed 8,
hidden 8, kernel 3).
"""
from typing import Optional, Tuple, Union

import torch
from torch import Tensor
from torch.nn import Conv1d, Dropout, LayerNorm, Linear, Module, Parameter, ReLU, Sequential


# --- fairseq2 (v0.2) pieces the module imports, reduced to what is used ---------------
def to_padding_mask(seq_lens: Tensor, batch_seq_len: int) -> Tensor:
    batch_size = seq_lens.size(0)

    indices = torch.arange(batch_seq_len, device=seq_lens.device).expand(batch_size, -1)

    return indices < seq_lens.unsqueeze(1)


class PaddingMask:
    """Represents a sequence padding mask (fairseq2.nn.padding.PaddingMask)."""

    def __init__(self, seq_lens: Tensor, batch_seq_len: int) -> None:
        self._seq_lens = seq_lens
        self._batch_seq_len = batch_seq_len
        self._materialized: Optional[Tensor] = None

    @property
    def seq_lens(self) -> Tensor:
        return self._seq_lens

    def materialize(self) -> Tensor:
        if self._materialized is None:
            self._materialized = to_padding_mask(self._seq_lens, self._batch_seq_len)

        return self._materialized


def apply_padding_mask(
    seqs: Tensor, padding_mask: Optional[PaddingMask], pad_value: Union[int, float, Tensor] = 0
) -> Tensor:
    if padding_mask is None:
        return seqs

    m = padding_mask.materialize()

    for _ in range(seqs.ndim - m.ndim):
        m = m.unsqueeze(-1)

    return seqs.where(m, pad_value)


def create_standard_layer_norm(model_dim: int, *, device=None, dtype=None) -> LayerNorm:
    return LayerNorm(model_dim, device=device, dtype=dtype)


class FiLM(Module):
    """
    A Feature-wise Linear Modulation Layer from
    'FiLM: Visual Reasoning with a General Conditioning Layer'
    """

    proj: Linear
    s_gamma: Parameter
    s_beta: Parameter

    def __init__(
        self,
        cond_dim: int,
        embed_dim: int,
        device=None,
        dtype=None,
    ):
        super().__init__()

        self.proj = Linear(
            cond_dim, 2 * embed_dim, bias=True, device=device, dtype=dtype
        )

        self.s_gamma = Parameter(
            torch.ones(
                1,
                device=device,
                dtype=dtype,
            ),
            requires_grad=True,
        )

        self.s_beta = Parameter(
            torch.ones(
                1,
                device=device,
                dtype=dtype,
            ),
            requires_grad=True,
        )

    def forward(self, x: Tensor, cond_embs: Tensor) -> Tensor:
        """
        x -- [B, T, H]
        cond_emb -- [B, 1, C]
        """
        # get trainable gamma, beta
        gammas, betas = self.proj(cond_embs).chunk(2, dim=-1)  # B x 1 x H

        # apply film
        gammas = self.s_gamma * gammas.expand_as(x)
        betas = self.s_beta * betas.expand_as(x)

        return (gammas + 1.0) * x + betas  # type: ignore[no-any-return]


class VariancePredictor(Module):
    """Represents the duration/pitch/energy predictor as described in
    :cite:t:`https://arxiv.org/pdf/2006.04558.pdf`"""

    conv1: Sequential
    ln1: LayerNorm
    dropout_module: Dropout
    conv2: Sequential
    ln2: LayerNorm
    proj: Linear
    film: Optional[FiLM]

    def __init__(
        self,
        encoder_embed_dim: int,
        var_pred_hidden_dim: int,
        var_pred_kernel_size: int,
        var_pred_dropout: float,
        bias: bool = True,
        use_film: bool = False,
        film_cond_dim: int = 512,
        device=None,
        dtype=None,
    ):
        super().__init__()

        self.conv1 = Sequential(
            Conv1d(
                encoder_embed_dim,
                var_pred_hidden_dim,
                var_pred_kernel_size,
                stride=1,
                padding=(var_pred_kernel_size - 1) // 2,
                bias=bias,
                device=device,
                dtype=dtype,
            ),
            ReLU(),
        )

        layer_norm_factory = create_standard_layer_norm

        self.ln1 = layer_norm_factory(var_pred_hidden_dim, device=device, dtype=dtype)

        self.dropout_module = Dropout(p=var_pred_dropout)

        self.conv2 = Sequential(
            Conv1d(
                var_pred_hidden_dim,
                var_pred_hidden_dim,
                var_pred_kernel_size,
                stride=1,
                padding=1,
                bias=bias,
                device=device,
                dtype=dtype,
            ),
            ReLU(),
        )

        self.ln2 = layer_norm_factory(var_pred_hidden_dim, device=device, dtype=dtype)

        self.proj = Linear(
            var_pred_hidden_dim, 1, bias=True, device=device, dtype=dtype
        )

        if use_film:
            self.film = FiLM(
                film_cond_dim, var_pred_hidden_dim, device=device, dtype=dtype
            )
        else:
            self.register_module("film", None)

    def forward(
        self,
        seqs: Tensor,
        padding_mask: Optional[PaddingMask],
        film_cond_emb: Optional[Tensor] = None,
    ) -> Tensor:
        # Ensure that we do not leak padded positions in the convolution layer.
        seqs = apply_padding_mask(seqs, padding_mask)

        # (N, S, M) -> (N, M, S)
        seqs = seqs.transpose(1, 2)

        # (N, M, S) -> (N, H, S)
        seqs = self.conv1(seqs)

        # (N, H, S) -> (N, S, H)
        seqs = seqs.transpose(1, 2)

        seqs = self.ln1(seqs)

        seqs = self.dropout_module(seqs)

        seqs = apply_padding_mask(seqs, padding_mask)

        # (N, S, H) -> (N, H, S)
        seqs = seqs.transpose(1, 2)

        # (N, H, S) -> (N, H, S)
        seqs = self.conv2(seqs)

        # (N, H, S) -> (N, S, H)
        seqs = seqs.transpose(1, 2)

        seqs = self.ln2(seqs)

        seqs = self.dropout_module(seqs)

        seqs = apply_padding_mask(seqs, padding_mask)

        if self.film is not None and film_cond_emb is not None:
            seqs = self.film(seqs, film_cond_emb)
            seqs = apply_padding_mask(seqs, padding_mask)

        # (N, S, H) -> (N, S, 1) -> (N, S)
        seqs = self.proj(seqs).squeeze(dim=2)

        return seqs


class HardUpsampling(Module):
    """Upsamples sequences in a deterministic way as governed by durations."""

    def forward(self, seqs: Tensor, durations: Tensor) -> Tuple[Tensor, Tensor]:
        # seqs: (N, S, M), durations: (N, S)
        if durations.dtype not in (torch.int16, torch.int32, torch.int64):
            raise TypeError("The durations tensor should have an integer dtype.")

        upsampled_seq_lens = durations.sum(dim=1)
        max_len = int(upsampled_seq_lens.max().item())
        N, _, M = seqs.shape
        upsampled_seqs = seqs.new_zeros((N, max_len, M))

        for b in range(N):
            upsampled_seqs[b, : upsampled_seq_lens[b]] = seqs[b].repeat_interleave(
                durations[b], dim=0
            )

        return upsampled_seqs, upsampled_seq_lens


class VarianceAdaptor(Module):
    """Represent the Variance adaptor as described in
    :cite:t:`https://arxiv.org/pdf/2006.04558.pdf`"""

    duration_predictor: VariancePredictor
    pitch_predictor: Optional[VariancePredictor]
    energy_predictor: Optional[VariancePredictor]
    hard_upsampling: HardUpsampling

    def __init__(
        self,
        duration_predictor: VariancePredictor,
        pitch_predictor: Optional[VariancePredictor] = None,
        energy_predictor: Optional[VariancePredictor] = None,
    ):
        super().__init__()

        self.duration_predictor = duration_predictor

        if pitch_predictor:
            self.pitch_predictor = pitch_predictor
        else:
            self.register_module("pitch_predictor", None)

        if energy_predictor:
            self.energy_predictor = energy_predictor
        else:
            self.register_module("energy_predictor", None)

        self.hard_upsampling = HardUpsampling()

    def forward(
        self,
        seqs: Tensor,
        padding_mask: Optional[PaddingMask],
        duration_factor: float = 1.0,
        min_duration: int = 0,
        film_cond_emb: Optional[Tensor] = None,
    ) -> Tuple[Tensor, PaddingMask]:
        log_durations = self.duration_predictor(seqs, padding_mask, film_cond_emb)

        durations = torch.clamp(
            torch.round((torch.exp(log_durations) - 1) * duration_factor).long(),
            min=min_duration,
        )

        # We need to apply the padding_mask again since we clamp by min_duration.
        durations = apply_padding_mask(durations, padding_mask, pad_value=0)

        # TODO: Implement pitch, energy predictors.
        # TODO: Implement GaussianUpsampling.
        seqs, seq_lens = self.hard_upsampling(seqs, durations)

        return seqs, PaddingMask(seq_lens, batch_seq_len=seqs.size(1))


def create_variance_adaptor(model_dim: int = 8) -> VarianceAdaptor:
    # t2u_builder.py: UnitYT2UBuilder.build_variance_adaptor (duration predictor only).
    duration_predictor = VariancePredictor(
        model_dim, 8, 3, var_pred_dropout=0.5, bias=True, use_film=False
    )
    return VarianceAdaptor(duration_predictor).eval()


variance_adaptor = torch.compile(create_variance_adaptor())


def make():
    torch.manual_seed(0)
    adaptor = create_variance_adaptor()
    with torch.no_grad():
        adaptor.duration_predictor.proj.bias.fill_(1.2)
    seqs = torch.randn(2, 5, 8)
    padding_mask = PaddingMask(torch.tensor([5, 3]), batch_seq_len=5)
    return adaptor, [(seqs, padding_mask), (seqs, None, 1.5, 1)]
