"""diffusers UNet2DConditionModel.forward prologue: upsample-size check over shape dims, mask to bias, get_time_embed (no break).

Source: huggingface/diffusers@58eb52c080:src/diffusers/models/unets/unet_2d_condition.py:852-872,1040-1100; src/diffusers/models/embeddings.py:27-80
Kept: default_overall_up_factor and the `for dim in sample.shape[-2:]` loop
with break, the attention_mask/encoder_attention_mask bias conversion,
center_input_sample, get_time_embed (not-a-tensor -> torch.tensor([t]),
0-d -> [None], expand to batch), get_timestep_embedding with its 1-d assert,
time_embedding MLP, and the upsample_size forwarded to the up block.
Simplified: down/up blocks are a conv and an interpolate; 8 channels.
"""
import math

import torch
import torch.nn.functional as F
from torch import nn


def get_timestep_embedding(timesteps, embedding_dim, flip_sin_to_cos=False, downscale_freq_shift=1, scale=1, max_period=10000):
    assert len(timesteps.shape) == 1, "Timesteps should be a 1d-array"
    half_dim = embedding_dim // 2
    exponent = -math.log(max_period) * torch.arange(start=0, end=half_dim, dtype=torch.float32, device=timesteps.device)
    exponent = exponent / (half_dim - downscale_freq_shift)
    emb = torch.exp(exponent)
    emb = timesteps[:, None].float() * emb[None, :]
    emb = scale * emb
    emb = torch.cat([torch.sin(emb), torch.cos(emb)], dim=-1)
    if flip_sin_to_cos:
        emb = torch.cat([emb[:, half_dim:], emb[:, :half_dim]], dim=-1)
    if embedding_dim % 2 == 1:
        emb = torch.nn.functional.pad(emb, (0, 1, 0, 0))
    return emb


class Config:
    center_input_sample = False


class UNet2DConditionModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.config = Config()
        self.num_upsamplers = 1
        self.conv_in = nn.Conv2d(4, 8, 3, padding=1)
        self.time_embedding = nn.Sequential(nn.Linear(8, 8), nn.SiLU(), nn.Linear(8, 8))
        self.down = nn.Conv2d(8, 8, 3, stride=2, padding=1)
        self.conv_out = nn.Conv2d(8, 4, 3, padding=1)

    def get_time_embed(self, sample, timestep):
        timesteps = timestep
        if not torch.is_tensor(timesteps):
            dtype = torch.float64 if isinstance(timestep, float) else torch.int64
            timesteps = torch.tensor([timesteps], dtype=dtype, device=sample.device)
        elif len(timesteps.shape) == 0:
            timesteps = timesteps[None].to(sample.device)
        timesteps = timesteps.expand(sample.shape[0])
        t_emb = get_timestep_embedding(timesteps, 8, flip_sin_to_cos=True, downscale_freq_shift=0)
        return t_emb.to(dtype=sample.dtype)

    def forward(self, sample, timestep, encoder_hidden_states=None, attention_mask=None, encoder_attention_mask=None, return_dict=True):
        default_overall_up_factor = 2**self.num_upsamplers
        forward_upsample_size = False
        upsample_size = None
        for dim in sample.shape[-2:]:
            if dim % default_overall_up_factor != 0:
                forward_upsample_size = True
                break
        if attention_mask is not None:
            attention_mask = (1 - attention_mask.to(sample.dtype)) * -10000.0
            attention_mask = attention_mask.unsqueeze(1)
        if encoder_attention_mask is not None:
            encoder_attention_mask = (1 - encoder_attention_mask.to(sample.dtype)) * -10000.0
            encoder_attention_mask = encoder_attention_mask.unsqueeze(1)
        if self.config.center_input_sample:
            sample = 2 * sample - 1.0
        t_emb = self.get_time_embed(sample=sample, timestep=timestep)
        emb = self.time_embedding(t_emb)
        sample = self.conv_in(sample) + emb[:, :, None, None]
        skip = sample
        sample = self.down(sample)
        if forward_upsample_size:
            upsample_size = skip.shape[2:]
        if upsample_size is None:
            sample = F.interpolate(sample, scale_factor=2.0, mode="nearest")
        else:
            sample = F.interpolate(sample, size=upsample_size, mode="nearest")
        sample = self.conv_out(sample + skip)
        if not return_dict:
            return (sample,)
        return {"sample": sample}


def load_pipeline():
    unet = UNet2DConditionModel().eval()
    unet = torch.compile(unet, mode="reduce-overhead", fullgraph=True)
    return unet


def make():
    torch.manual_seed(0)
    return UNet2DConditionModel().eval(), [
        (torch.randn(1, 4, 8, 8), torch.tensor(500)),
        (torch.randn(1, 4, 7, 8), 250, None, torch.ones(1, 3)),
        (torch.randn(2, 4, 8, 8), torch.tensor([10, 20])),
    ]
