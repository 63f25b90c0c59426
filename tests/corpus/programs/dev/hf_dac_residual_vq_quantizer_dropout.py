"""DAC residual vector quantizer: `n_quantizers` becomes a tensor in training (quantizer dropout); eval stops at `i >= n_quantizers`.

Source: huggingface/transformers@v5.23.0:src/transformers/models/dac/modeling_dac.py:103-172,266-339
Also: src/transformers/integrations/accelerate.py:987-1025 (force_accelerate_hooks, kept verbatim)
Kept: DacVectorQuantize (factorized, l2-normalized codebook lookup behind the
`force_accelerate_hooks("codebook")` decorator) and
DacResidualVectorQuantizer.forward verbatim: the training-only
`torch.randint` dropout of quantizers, the `self.training is False and i >=
n_quantizers` early stop, the per-quantizer mask and loss sums.
Simplified: 4 codebooks of 16 entries, codebook_dim 4, hidden size 8; the
encoder/decoder are left out (the quantizer is compiled on its own).
"""
import functools
from collections.abc import Callable

import torch
import torch.nn as nn
import torch.nn.functional as F


def force_accelerate_hooks(child_module_names: str | list[str]) -> Callable:
    """
    Decorator to forcefully fire the accelerate hooks of `child_module_names`, before entering the forward of the parent itself.
    """

    if isinstance(child_module_names, str):
        child_module_names = [child_module_names]

    def decorator(forward_func: Callable) -> Callable:
        @functools.wraps(forward_func)
        def wrapped(self, *args, **kwargs):
            hooked_modules = []
            for child_module_name in child_module_names:
                hooked_module = getattr(self, child_module_name)
                hook = getattr(hooked_module, "_hf_hook", None)
                hooked_modules.append((hooked_module, hook))
                if hook is not None:
                    hook.pre_forward(hooked_module)

            output = forward_func(self, *args, **kwargs)

            for hooked_module, hook in reversed(hooked_modules):
                if hook is not None:
                    hook.post_forward(hooked_module, ())

            return output

        return wrapped

    return decorator


class DacConfig:
    encoder_hidden_size = 2
    downsampling_ratios = [2, 2]
    n_codebooks = 4
    codebook_size = 16
    codebook_dim = 4
    quantizer_dropout = 0.5

    def __init__(self):
        self.hidden_size = self.encoder_hidden_size * (2 ** len(self.downsampling_ratios))


class DacVectorQuantize(nn.Module):
    """
    Implementation of VQ similar to Karpathy's repo (https://github.com/karpathy/deep-vector-quantization)
    """

    def __init__(self, config: DacConfig):
        super().__init__()

        self.codebook_dim = config.codebook_dim
        self.in_proj = nn.Conv1d(config.hidden_size, config.codebook_dim, kernel_size=1)
        self.out_proj = nn.Conv1d(config.codebook_dim, config.hidden_size, kernel_size=1)
        self.codebook = nn.Embedding(config.codebook_size, config.codebook_dim)

    def forward(self, hidden_state):
        projected_latents = self.in_proj(hidden_state)
        quantized_representation, audio_codes = self.decode_latents(projected_latents)

        commitment_loss = F.mse_loss(projected_latents, quantized_representation.detach(), reduction="mean")
        codebook_loss = F.mse_loss(quantized_representation, projected_latents.detach(), reduction="mean")
        # noop in forward pass, straight-through gradient estimator in backward pass
        quantized_representation = projected_latents + (quantized_representation - projected_latents).detach()
        quantized_representation = self.out_proj(quantized_representation)

        return quantized_representation, commitment_loss, codebook_loss, audio_codes, projected_latents

    @force_accelerate_hooks("codebook")
    def decode_latents(self, hidden_states):
        batch_size, hidden_dim, sequence_length = hidden_states.shape
        encodings = hidden_states.permute(0, 2, 1).reshape(batch_size * sequence_length, hidden_dim)
        codebook = self.codebook.weight  # codebook: (N x D)

        # L2 normalize encodings and codebook (ViT-VQGAN)
        encodings = F.normalize(encodings)
        codebook = F.normalize(codebook)

        # Compute euclidean distance with codebook
        l2_norm = encodings.pow(2).sum(1, keepdim=True)
        dist = -(l2_norm - 2 * encodings @ codebook.t()) + codebook.pow(2).sum(1, keepdim=True).t()

        indices = dist.max(1)[1]
        indices = indices.reshape(hidden_states.size(0), -1)
        quantized_representation = self.codebook(indices).transpose(1, 2)
        return quantized_representation, indices


class DacResidualVectorQuantizer(nn.Module):
    """
    ResidualVectorQuantize block - Introduced in SoundStream: An end2end neural audio codec (https://huggingface.co/papers/2107.03312)
    """

    def __init__(self, config: DacConfig):
        super().__init__()

        n_codebooks = config.n_codebooks
        quantizer_dropout = config.quantizer_dropout

        self.n_codebooks = n_codebooks

        self.quantizers = nn.ModuleList([DacVectorQuantize(config) for i in range(config.n_codebooks)])
        self.quantizer_dropout = quantizer_dropout

    def forward(self, hidden_state, n_quantizers: int | None = None):
        quantized_representation = 0
        residual = hidden_state
        commitment_loss = 0
        codebook_loss = 0

        audio_codes = []
        projected_latents = []

        n_quantizers = n_quantizers if n_quantizers is not None else self.n_codebooks
        if self.training:
            n_quantizers = torch.ones((hidden_state.shape[0],)) * self.n_codebooks + 1
            dropout = torch.randint(1, self.n_codebooks + 1, (hidden_state.shape[0],))
            n_dropout = int(hidden_state.shape[0] * self.quantizer_dropout)
            n_quantizers[:n_dropout] = dropout[:n_dropout]
            n_quantizers = n_quantizers.to(hidden_state.device)

        for i, quantizer in enumerate(self.quantizers):
            if self.training is False and i >= n_quantizers:
                break

            quantized_representation_i, commitment_loss_i, codebook_loss_i, indices_i, projected_latents_i = quantizer(
                residual
            )

            # Create mask to apply quantizer dropout
            mask = torch.full((hidden_state.shape[0],), i, device=hidden_state.device, dtype=torch.long) < n_quantizers
            quantized_representation = quantized_representation + quantized_representation_i * mask[:, None, None]
            residual = residual - quantized_representation_i

            # Sum losses
            commitment_loss += commitment_loss_i * mask
            codebook_loss += codebook_loss_i * mask

            audio_codes.append(indices_i)
            projected_latents.append(projected_latents_i)

        audio_codes = torch.stack(audio_codes, dim=1)
        projected_latents = torch.cat(projected_latents, dim=1)

        return quantized_representation, audio_codes, projected_latents, commitment_loss, codebook_loss


quantizer = DacResidualVectorQuantizer(DacConfig()).eval()
quantizer.compile()


def make():
    torch.manual_seed(0)
    latents = torch.randn(4, 8, 6)
    return DacResidualVectorQuantizer(DacConfig()).eval(), [(latents,), (latents, 2)]
