"""Dia TTS `_prepare_generation` compiled whole: the text prompt is byte-encoded with `bytes.replace` inside the compiled region, and a verbose `print` follows.

Source: https://github.com/nari-labs/dia/pull/165 ("The python builtin functions `bytes.replace` and `print`
cause graph breaks and can cause recompilation"); the code before the fix, nari-labs/dia@5f57172^:dia/model.py:193-281,
dia/audio.py:6-85
Kept: Dia._prepare_text_input (`text.encode("utf-8")`, the `[S1]`/`[S2]` byte replacements, `list(bytes)`,
the padded `torch.full` and slice write), _prepare_audio_prompt with build_delay_indices and
apply_audio_delay, _prepare_generation's order (cond/uncond encoder input, the `isinstance(audio_prompt,
str)` load, the `if verbose: print(...)`, the encoder call) and
`self._prepare_generation = torch.compile(self._prepare_generation, dynamic=True)` from generate().
Simplified: the encoder is an embedding plus one linear layer and the decoder state setup after it is
left out (the encoder output and the prefill are returned); text_length 32, 3 channels with delays
[0, 1, 2]; audio loading (torchaudio + DAC) is not reached.
"""
import typing as tp

import torch
from torch import nn


class DataConfig:
    text_length = 32
    text_pad_value = 0
    channels = 3
    audio_bos_value = 1026
    audio_pad_value = 1025
    delay_pattern = [0, 1, 2]


class DiaConfig:
    data = DataConfig()


def build_delay_indices(B: int, T: int, C: int, delay_pattern: tp.List[int]) -> tp.Tuple[torch.Tensor, torch.Tensor]:
    """
    Precompute (t_idx_BxTxC, indices_BTCx3) so that out[t, c] = in[t - delay[c], c].
    Negative t_idx => BOS; t_idx >= T => PAD.
    """
    delay_arr = torch.tensor(delay_pattern, dtype=torch.int32)

    t_idx_BxT = torch.broadcast_to(
        torch.arange(T, dtype=torch.int32)[None, :],
        [B, T],
    )
    t_idx_BxTx1 = t_idx_BxT[..., None]
    t_idx_BxTxC = t_idx_BxTx1 - delay_arr.view(1, 1, C)

    b_idx_BxTxC = torch.broadcast_to(
        torch.arange(B, dtype=torch.int32).view(B, 1, 1),
        [B, T, C],
    )
    c_idx_BxTxC = torch.broadcast_to(
        torch.arange(C, dtype=torch.int32).view(1, 1, C),
        [B, T, C],
    )

    # We must clamp time indices to [0..T-1] so gather_nd equivalent won't fail
    t_clamped_BxTxC = torch.clamp(t_idx_BxTxC, 0, T - 1)

    indices_BTCx3 = torch.stack(
        [
            b_idx_BxTxC.reshape(-1),
            t_clamped_BxTxC.reshape(-1),
            c_idx_BxTxC.reshape(-1),
        ],
        dim=1,
    ).long()  # Ensure indices are long type for indexing

    return t_idx_BxTxC, indices_BTCx3


def apply_audio_delay(
    audio_BxTxC: torch.Tensor,
    pad_value: int,
    bos_value: int,
    precomp: tp.Tuple[torch.Tensor, torch.Tensor],
) -> torch.Tensor:
    """
    Applies the delay pattern to batched audio tokens using precomputed indices,
    inserting BOS where t_idx < 0 and PAD where t_idx >= T.
    """
    device = audio_BxTxC.device  # Get device from input tensor
    t_idx_BxTxC, indices_BTCx3 = precomp
    t_idx_BxTxC = t_idx_BxTxC.to(device)  # Move precomputed indices to device
    indices_BTCx3 = indices_BTCx3.to(device)

    # Equivalent of tf.gather_nd using advanced indexing
    # Ensure indices are long type if not already (build_delay_indices should handle this)
    gathered_flat = audio_BxTxC[indices_BTCx3[:, 0], indices_BTCx3[:, 1], indices_BTCx3[:, 2]]
    gathered_BxTxC = gathered_flat.view(audio_BxTxC.shape)

    # Create masks on the correct device
    mask_bos = t_idx_BxTxC < 0  # => place bos_value
    mask_pad = t_idx_BxTxC >= audio_BxTxC.shape[1]  # => place pad_value

    # Create scalar tensors on the correct device
    bos_tensor = torch.tensor(bos_value, dtype=audio_BxTxC.dtype, device=device)
    pad_tensor = torch.tensor(pad_value, dtype=audio_BxTxC.dtype, device=device)

    # If mask_bos, BOS; else if mask_pad, PAD; else original gather
    # All tensors should now be on the same device
    result_BxTxC = torch.where(mask_bos, bos_tensor, torch.where(mask_pad, pad_tensor, gathered_BxTxC))

    return result_BxTxC


class TinyEncoder(nn.Module):
    """Stands in for DiaModel.encoder: byte embeddings and one projection."""

    def __init__(self, vocab=256, dim=8):
        super().__init__()
        self.embedding = nn.Embedding(vocab, dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x_ids):
        return self.proj(self.embedding(x_ids))


class Dia:
    def __init__(self, config: DiaConfig, device: torch.device | None = None):
        self.config = config
        self.device = device if device is not None else torch.device("cpu")
        self.encoder = TinyEncoder()

    def load_audio(self, audio_path: str) -> torch.Tensor:
        raise NotImplementedError("needs torchaudio and the DAC codec")

    def _prepare_text_input(self, text: str) -> torch.Tensor:
        """Encodes text prompt, pads, and creates attention mask and positions."""
        text_pad_value = self.config.data.text_pad_value
        max_len = self.config.data.text_length

        byte_text = text.encode("utf-8")
        replaced_bytes = byte_text.replace(b"[S1]", b"\x01").replace(b"[S2]", b"\x02")
        text_tokens = list(replaced_bytes)

        current_len = len(text_tokens)
        src_tokens = torch.full(
            (1, max_len),
            fill_value=text_pad_value,
            dtype=torch.long,
            device=self.device,
        )
        src_tokens[0, :current_len] = torch.tensor(
            text_tokens[:max_len],
            dtype=torch.long,
            device=self.device,
        )
        return src_tokens

    def _prepare_audio_prompt(self, audio_prompt: torch.Tensor | None) -> tuple[torch.Tensor, int]:
        num_channels = self.config.data.channels
        audio_bos_value = self.config.data.audio_bos_value
        audio_pad_value = self.config.data.audio_pad_value
        delay_pattern = self.config.data.delay_pattern
        max_delay_pattern = max(delay_pattern)

        parts = [
            torch.full(
                (1, num_channels),
                fill_value=audio_bos_value,
                dtype=torch.int,
                device=self.device,
            )
        ]

        prefill_step = 1

        if audio_prompt is not None:
            prefill_step += audio_prompt.shape[0]
            parts.append(audio_prompt)

        delay_pad_tensor = torch.full(
            (max_delay_pattern, num_channels), fill_value=-1, dtype=torch.int, device=self.device
        )
        parts.append(delay_pad_tensor)
        prefill = torch.cat(parts, dim=0)

        delay_precomp = build_delay_indices(
            B=1,
            T=prefill.shape[0],
            C=num_channels,
            delay_pattern=delay_pattern,
        )

        prefill = apply_audio_delay(
            audio_BxTxC=prefill.unsqueeze(0),
            pad_value=audio_pad_value,
            bos_value=audio_bos_value,
            precomp=delay_precomp,
        ).squeeze(0)

        return prefill, prefill_step

    def _prepare_generation(self, text: str, audio_prompt: str | torch.Tensor | None, verbose: bool):
        enc_input_cond = self._prepare_text_input(text)
        enc_input_uncond = torch.zeros_like(enc_input_cond)
        enc_input = torch.cat([enc_input_uncond, enc_input_cond], dim=0)

        if isinstance(audio_prompt, str):
            audio_prompt = self.load_audio(audio_prompt)
        prefill, prefill_step = self._prepare_audio_prompt(audio_prompt)

        if verbose:
            print("generate: data loaded")

        encoder_out = self.encoder(enc_input)
        return encoder_out, prefill, prefill_step

    def generate(self, text: str, audio_prompt=None, use_torch_compile: bool = False, verbose: bool = False):
        if use_torch_compile and not hasattr(self, "_compiled"):
            # Compilation can take about a minute.
            self._prepare_generation = torch.compile(self._prepare_generation, dynamic=True)
            self._compiled = True
        return self._prepare_generation(text, audio_prompt, verbose)


def make():
    torch.manual_seed(0)
    dia = Dia(DiaConfig())
    text = "[S1] Dia is an open weights text to dialogue model. [S2] You get full control."
    audio_prompt = torch.randint(0, 1024, (4, 3), dtype=torch.int)
    return dia._prepare_generation, [(text, None, True), ("[S1] Hi.", audio_prompt, False)]
