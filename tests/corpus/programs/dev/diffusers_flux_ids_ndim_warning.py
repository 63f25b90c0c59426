"""diffusers FluxTransformer2DModel.forward: 3-d txt_ids/img_ids trigger logger.warning, then FluxPosEmbed per axis.

Source: huggingface/diffusers@58eb52c080:src/diffusers/models/transformers/transformer_flux.py:507-526,671-760; src/diffusers/models/embeddings.py:1120-1184
Kept: x_embedder, timestep * 1000 with the optional guidance, the two
`ndim == 3` deprecation warnings with `[0]`, torch.cat of ids, FluxPosEmbed
(loop over axes calling get_1d_rotary_pos_embed with its int/ndarray pos
handling and repeat_interleave_real output), the joint_attention_kwargs
ip-adapter pop, the block loop.
Simplified: one linear "block" applying the rotary cos/sin; inner dim 8, axes (4, 4).
"""
import logging

import numpy as np
import torch
from torch import nn

logger = logging.getLogger(__name__)


def get_1d_rotary_pos_embed(dim, pos, theta=10000.0, use_real=False, linear_factor=1.0, ntk_factor=1.0, repeat_interleave_real=True, freqs_dtype=torch.float32):
    assert dim % 2 == 0
    if isinstance(pos, int):
        pos = torch.arange(pos)
    if isinstance(pos, np.ndarray):
        pos = torch.from_numpy(pos)
    theta = theta * ntk_factor
    freqs = 1.0 / (theta ** (torch.arange(0, dim, 2, dtype=freqs_dtype, device=pos.device) / dim)) / linear_factor
    freqs = torch.outer(pos, freqs)
    if use_real and repeat_interleave_real:
        freqs_cos = freqs.cos().repeat_interleave(2, dim=1, output_size=freqs.shape[1] * 2).float()
        freqs_sin = freqs.sin().repeat_interleave(2, dim=1, output_size=freqs.shape[1] * 2).float()
        return freqs_cos, freqs_sin
    elif use_real:
        return torch.cat([freqs.cos(), freqs.cos()], dim=-1).float(), torch.cat([freqs.sin(), freqs.sin()], dim=-1).float()
    return torch.polar(torch.ones_like(freqs), freqs)


class FluxPosEmbed(nn.Module):
    def __init__(self, theta, axes_dim):
        super().__init__()
        self.theta = theta
        self.axes_dim = axes_dim

    def forward(self, ids):
        n_axes = ids.shape[-1]
        cos_out = []
        sin_out = []
        pos = ids.float()
        freqs_dtype = torch.float64
        for i in range(n_axes):
            cos, sin = get_1d_rotary_pos_embed(self.axes_dim[i], pos[:, i], theta=self.theta, repeat_interleave_real=True, use_real=True, freqs_dtype=freqs_dtype)
            cos_out.append(cos)
            sin_out.append(sin)
        freqs_cos = torch.cat(cos_out, dim=-1).to(ids.device)
        freqs_sin = torch.cat(sin_out, dim=-1).to(ids.device)
        return freqs_cos, freqs_sin


class FluxTransformer2DModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.x_embedder = nn.Linear(4, 8)
        self.context_embedder = nn.Linear(6, 8)
        self.time_proj = nn.Linear(1, 8)
        self.pos_embed = FluxPosEmbed(theta=10000, axes_dim=(4, 4))
        self.transformer_blocks = nn.ModuleList([nn.Linear(8, 8)])
        self.proj_out = nn.Linear(8, 4)

    def forward(self, hidden_states, encoder_hidden_states, timestep, img_ids, txt_ids, guidance=None, joint_attention_kwargs=None):
        hidden_states = self.x_embedder(hidden_states)
        timestep = timestep.to(hidden_states.dtype) * 1000
        if guidance is not None:
            guidance = guidance.to(hidden_states.dtype) * 1000
        temb = self.time_proj(timestep[:, None]) if guidance is None else self.time_proj((timestep + guidance)[:, None])
        encoder_hidden_states = self.context_embedder(encoder_hidden_states)
        if txt_ids.ndim == 3:
            logger.warning(
                "Passing `txt_ids` 3d torch.Tensor is deprecated."
                "Please remove the batch dimension and pass it as a 2d torch Tensor"
            )
            txt_ids = txt_ids[0]
        if img_ids.ndim == 3:
            logger.warning(
                "Passing `img_ids` 3d torch.Tensor is deprecated."
                "Please remove the batch dimension and pass it as a 2d torch Tensor"
            )
            img_ids = img_ids[0]
        ids = torch.cat((txt_ids, img_ids), dim=0)
        cos, sin = self.pos_embed(ids)
        if joint_attention_kwargs is not None and "ip_adapter_image_embeds" in joint_attention_kwargs:
            joint_attention_kwargs.pop("ip_adapter_image_embeds")
        hidden_states = torch.cat([encoder_hidden_states, hidden_states], dim=1) + temb[:, None]
        for index_block, block in enumerate(self.transformer_blocks):
            hidden_states = block(hidden_states * cos + hidden_states * sin)
        return (self.proj_out(hidden_states[:, encoder_hidden_states.shape[1]:]),)


transformer = FluxTransformer2DModel()
transformer = torch.compile(transformer, mode="max-autotune", fullgraph=True)


def make():
    torch.manual_seed(0)
    img_ids = torch.randint(0, 4, (4, 2))
    txt_ids = torch.zeros(3, 2)
    args = (torch.randn(1, 4, 4), torch.randn(1, 3, 6), torch.tensor([0.5]))
    return FluxTransformer2DModel(), [(*args, img_ids, txt_ids), (*args, img_ids[None], txt_ids[None])]
