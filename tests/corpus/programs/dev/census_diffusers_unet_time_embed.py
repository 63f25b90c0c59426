"""diffusers UNet2DConditionModel `get_time_embed`: Python-number / 0-d / 1-d timestep handling with
`torch.is_tensor`, `len(timesteps.shape) == 0`, `expand`, and `get_timestep_embedding`'s constant-message assert
on the shape (no break).

Source: huggingface/diffusers@v0.42.1:src/diffusers/models/unets/unet_2d_condition.py:852-872 and
src/diffusers/models/embeddings.py:27-78, 1075-1091
Census: penguinwu/oss-model-graph-break-corpus identify_results (2026-04-19): UNet2DConditionModel is full_graph in
eval and train.
Kept: get_time_embed, Timesteps, get_timestep_embedding verbatim (flip, odd-dim pad).
Simplified: `maybe_adjust_dtype_for_device` (an mps float64 workaround) returns the dtype unchanged; the
time embedding MLP is one Linear.
"""
import math

import torch
from torch import nn


def maybe_adjust_dtype_for_device(dtype, device):
    return dtype


def get_timestep_embedding(timesteps, embedding_dim, flip_sin_to_cos=False, downscale_freq_shift=1, scale=1,
                           max_period=10000):
    assert len(timesteps.shape) == 1, "Timesteps should be a 1d-array"

    half_dim = embedding_dim // 2
    exponent = -math.log(max_period) * torch.arange(
        start=0, end=half_dim, dtype=torch.float32, device=timesteps.device
    )
    exponent = exponent / (half_dim - downscale_freq_shift)

    emb = torch.exp(exponent)
    emb = timesteps[:, None].float() * emb[None, :]

    # scale embeddings
    emb = scale * emb

    # concat sine and cosine embeddings
    emb = torch.cat([torch.sin(emb), torch.cos(emb)], dim=-1)

    # flip sine and cosine embeddings
    if flip_sin_to_cos:
        emb = torch.cat([emb[:, half_dim:], emb[:, :half_dim]], dim=-1)

    # zero pad
    if embedding_dim % 2 == 1:
        emb = torch.nn.functional.pad(emb, (0, 1, 0, 0))
    return emb


class Timesteps(nn.Module):
    def __init__(self, num_channels, flip_sin_to_cos, downscale_freq_shift, scale=1):
        super().__init__()
        self.num_channels = num_channels
        self.flip_sin_to_cos = flip_sin_to_cos
        self.downscale_freq_shift = downscale_freq_shift
        self.scale = scale

    def forward(self, timesteps):
        t_emb = get_timestep_embedding(
            timesteps,
            self.num_channels,
            flip_sin_to_cos=self.flip_sin_to_cos,
            downscale_freq_shift=self.downscale_freq_shift,
            scale=self.scale,
        )
        return t_emb


class UNet2DConditionModel(nn.Module):
    def __init__(self, block_out=5):
        super().__init__()
        self.time_proj = Timesteps(block_out, flip_sin_to_cos=True, downscale_freq_shift=0)
        self.time_embedding = nn.Linear(block_out, 8)

    def get_time_embed(self, sample, timestep):
        timesteps = timestep
        if not torch.is_tensor(timesteps):
            # TODO: this requires sync between CPU and GPU. So try to pass timesteps as tensors if you can
            # This would be a good case for the `match` statement (Python 3.10+)
            dtype = maybe_adjust_dtype_for_device(
                torch.float64 if isinstance(timestep, float) else torch.int64, sample.device
            )
            timesteps = torch.tensor([timesteps], dtype=dtype, device=sample.device)
        elif len(timesteps.shape) == 0:
            timesteps = timesteps[None].to(sample.device)

        # broadcast to batch dimension in a way that's compatible with ONNX/Core ML
        timesteps = timesteps.expand(sample.shape[0])

        t_emb = self.time_proj(timesteps)
        # `Timesteps` does not contain any weights and will always return f32 tensors
        # but time_embedding might actually be running in fp16. so we need to cast here.
        t_emb = t_emb.to(dtype=sample.dtype)
        return t_emb

    def forward(self, sample, timestep):
        t_emb = self.get_time_embed(sample=sample, timestep=timestep)
        emb = self.time_embedding(t_emb)
        return sample + emb[:, :, None, None]


unet = torch.compile(UNet2DConditionModel(), fullgraph=True)


def make():
    torch.manual_seed(0)
    sample = torch.randn(2, 8, 2, 2)
    return UNet2DConditionModel(), [(sample, torch.tensor(10)), (sample, torch.tensor([3, 7])), (sample, 5)]
