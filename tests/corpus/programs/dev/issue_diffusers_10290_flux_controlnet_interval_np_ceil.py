"""Flux transformer forward with ControlNet residuals: `int(np.ceil(len(blocks) / len(samples)))` per block.

Source: huggingface/diffusers#10290 (https://github.com/huggingface/diffusers/issues/10290)
The reporter compiled `pipeline.transformer` of Flux + ControlNet with
`torch.compile(..., mode="reduce-overhead", fullgraph=True)` and it failed at
transformer_flux.py:519, `interval_control = int(np.ceil(interval_control))`.
The forward is translated from huggingface/diffusers
src/diffusers/models/transformers/transformer_flux.py `FluxTransformer2DModel.forward`
(diffusers 0.32): joint_attention_kwargs copy/pop of `scale`, the non-PEFT
warning branch, x_embedder, `timestep * 1000` and optional guidance, the
time/text embedding, context_embedder, the 3-d txt_ids/img_ids deprecation
warnings, `torch.cat` of ids and the rotary pos embed, the dual-stream block
loop with the ControlNet residual (`controlnet_blocks_repeat` modulo form or
`index_block // interval_control`), the cat, the single-stream loop with its
in-place sliced residual add, the final slice, norm_out, proj_out, and the
`return_dict` tuple/output.
Simplified: USE_PEFT_BACKEND is False (no peft); the transformer blocks,
CombinedTimestepTextProjEmbeddings, FluxPosEmbed and AdaLayerNormContinuous are
small stand-ins with the same call signatures; no gradient checkpointing
branch, no ip-adapter; Transformer2DModelOutput is a plain dataclass (the
pipeline calls with `return_dict=False`); inner dim 8, 4 + 2 layers.
"""
import logging
import math
from dataclasses import dataclass
from typing import Any, Dict, Optional, Tuple

import numpy as np
import torch
import torch.nn as nn

logger = logging.getLogger(__name__)

USE_PEFT_BACKEND = False


@dataclass
class Transformer2DModelOutput:
    sample: torch.Tensor


class CombinedTimestepTextProjEmbeddings(nn.Module):
    # stand-in: sinusoidal timestep projection + MLP, plus pooled text projection
    def __init__(self, embedding_dim, pooled_projection_dim):
        super().__init__()
        self.num_channels = 16
        self.timestep_embedder = nn.Sequential(nn.Linear(16, embedding_dim), nn.SiLU(), nn.Linear(embedding_dim, embedding_dim))
        self.text_embedder = nn.Sequential(nn.Linear(pooled_projection_dim, embedding_dim), nn.SiLU(), nn.Linear(embedding_dim, embedding_dim))

    def forward(self, timestep, pooled_projection):
        half = self.num_channels // 2
        exponent = -math.log(10000) * torch.arange(half, dtype=torch.float32, device=timestep.device) / half
        emb = timestep[:, None].float() * torch.exp(exponent)[None, :]
        timesteps_proj = torch.cat([torch.cos(emb), torch.sin(emb)], dim=-1)
        timesteps_emb = self.timestep_embedder(timesteps_proj.to(dtype=pooled_projection.dtype))
        pooled_projections = self.text_embedder(pooled_projection)
        return timesteps_emb + pooled_projections


class FluxPosEmbed(nn.Module):
    # stand-in: one frequency table over the concatenated id axes
    def __init__(self, theta, axes_dim):
        super().__init__()
        self.theta = theta
        self.axes_dim = axes_dim

    def forward(self, ids):
        n_axes = ids.shape[-1]
        dim = sum(self.axes_dim)
        freqs = 1.0 / (self.theta ** (torch.arange(0, dim, 2, dtype=torch.float32, device=ids.device)[: dim // 2] / dim))
        pos = ids.float().sum(dim=-1, keepdim=True) / n_axes
        angles = pos * freqs[None, :]
        freqs_cos = angles.cos().repeat_interleave(2, dim=1)
        freqs_sin = angles.sin().repeat_interleave(2, dim=1)
        return freqs_cos, freqs_sin


class FluxTransformerBlock(nn.Module):
    # stand-in for the dual-stream block: modulated linear mixing of both streams
    def __init__(self, dim):
        super().__init__()
        self.norm1 = nn.Linear(dim, 2 * dim)
        self.norm1_context = nn.Linear(dim, 2 * dim)
        self.ff = nn.Linear(dim, dim)
        self.ff_context = nn.Linear(dim, dim)

    def forward(self, hidden_states, encoder_hidden_states, temb, image_rotary_emb=None, joint_attention_kwargs=None):
        shift, scale = self.norm1(temb).chunk(2, dim=-1)
        c_shift, c_scale = self.norm1_context(temb).chunk(2, dim=-1)
        cos, sin = image_rotary_emb
        hidden_states = hidden_states + self.ff(hidden_states * (1 + scale[:, None]) + shift[:, None]) * cos.mean()
        encoder_hidden_states = encoder_hidden_states + self.ff_context(encoder_hidden_states * (1 + c_scale[:, None]) + c_shift[:, None])
        return encoder_hidden_states, hidden_states


class FluxSingleTransformerBlock(nn.Module):
    # stand-in for the single-stream block
    def __init__(self, dim):
        super().__init__()
        self.norm = nn.Linear(dim, dim)
        self.proj_out = nn.Linear(dim, dim)

    def forward(self, hidden_states, temb, image_rotary_emb=None, joint_attention_kwargs=None):
        gate = self.norm(temb).unsqueeze(1)
        return hidden_states + gate * self.proj_out(hidden_states)


class AdaLayerNormContinuous(nn.Module):
    def __init__(self, embedding_dim, conditioning_embedding_dim, elementwise_affine=True, eps=1e-5):
        super().__init__()
        self.silu = nn.SiLU()
        self.linear = nn.Linear(conditioning_embedding_dim, embedding_dim * 2)
        self.norm = nn.LayerNorm(embedding_dim, eps, elementwise_affine)

    def forward(self, x, conditioning_embedding):
        emb = self.linear(self.silu(conditioning_embedding).to(x.dtype))
        scale, shift = torch.chunk(emb, 2, dim=1)
        x = self.norm(x) * (1 + scale)[:, None, :] + shift[:, None, :]
        return x


class FluxTransformer2DModel(nn.Module):
    def __init__(
        self,
        patch_size: int = 1,
        in_channels: int = 8,
        out_channels: Optional[int] = None,
        num_layers: int = 4,
        num_single_layers: int = 2,
        attention_head_dim: int = 4,
        num_attention_heads: int = 2,
        joint_attention_dim: int = 16,
        pooled_projection_dim: int = 8,
        guidance_embeds: bool = False,
        axes_dims_rope: Tuple[int] = (2, 2, 4),
    ):
        super().__init__()
        self.out_channels = out_channels or in_channels
        self.inner_dim = num_attention_heads * attention_head_dim

        self.pos_embed = FluxPosEmbed(theta=10000, axes_dim=axes_dims_rope)
        self.time_text_embed = CombinedTimestepTextProjEmbeddings(
            embedding_dim=self.inner_dim, pooled_projection_dim=pooled_projection_dim
        )
        self.context_embedder = nn.Linear(joint_attention_dim, self.inner_dim)
        self.x_embedder = nn.Linear(in_channels, self.inner_dim)

        self.transformer_blocks = nn.ModuleList([FluxTransformerBlock(self.inner_dim) for _ in range(num_layers)])
        self.single_transformer_blocks = nn.ModuleList([FluxSingleTransformerBlock(self.inner_dim) for _ in range(num_single_layers)])

        self.norm_out = AdaLayerNormContinuous(self.inner_dim, self.inner_dim, elementwise_affine=False, eps=1e-6)
        self.proj_out = nn.Linear(self.inner_dim, patch_size * patch_size * self.out_channels, bias=True)

        self.gradient_checkpointing = False

    def forward(
        self,
        hidden_states: torch.Tensor,
        encoder_hidden_states: torch.Tensor = None,
        pooled_projections: torch.Tensor = None,
        timestep: torch.LongTensor = None,
        img_ids: torch.Tensor = None,
        txt_ids: torch.Tensor = None,
        guidance: torch.Tensor = None,
        joint_attention_kwargs: Optional[Dict[str, Any]] = None,
        controlnet_block_samples=None,
        controlnet_single_block_samples=None,
        return_dict: bool = True,
        controlnet_blocks_repeat: bool = False,
    ):
        if joint_attention_kwargs is not None:
            joint_attention_kwargs = joint_attention_kwargs.copy()
            lora_scale = joint_attention_kwargs.pop("scale", 1.0)
        else:
            lora_scale = 1.0

        if USE_PEFT_BACKEND:
            # weight the lora layers by setting `lora_scale` for each PEFT layer
            raise NotImplementedError
        else:
            if joint_attention_kwargs is not None and joint_attention_kwargs.get("scale", None) is not None:
                logger.warning(
                    "Passing `scale` via `joint_attention_kwargs` when not using the PEFT backend is ineffective."
                )

        hidden_states = self.x_embedder(hidden_states)

        timestep = timestep.to(hidden_states.dtype) * 1000
        if guidance is not None:
            guidance = guidance.to(hidden_states.dtype) * 1000
        else:
            guidance = None

        temb = (
            self.time_text_embed(timestep, pooled_projections)
            if guidance is None
            else self.time_text_embed(timestep, guidance, pooled_projections)
        )

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
        image_rotary_emb = self.pos_embed(ids)

        for index_block, block in enumerate(self.transformer_blocks):
            encoder_hidden_states, hidden_states = block(
                hidden_states=hidden_states,
                encoder_hidden_states=encoder_hidden_states,
                temb=temb,
                image_rotary_emb=image_rotary_emb,
                joint_attention_kwargs=joint_attention_kwargs,
            )

            # controlnet residual
            if controlnet_block_samples is not None:
                interval_control = len(self.transformer_blocks) / len(controlnet_block_samples)
                interval_control = int(np.ceil(interval_control))
                # For Xlabs ControlNet.
                if controlnet_blocks_repeat:
                    hidden_states = (
                        hidden_states + controlnet_block_samples[index_block % len(controlnet_block_samples)]
                    )
                else:
                    hidden_states = hidden_states + controlnet_block_samples[index_block // interval_control]
        hidden_states = torch.cat([encoder_hidden_states, hidden_states], dim=1)

        for index_block, block in enumerate(self.single_transformer_blocks):
            hidden_states = block(
                hidden_states=hidden_states,
                temb=temb,
                image_rotary_emb=image_rotary_emb,
                joint_attention_kwargs=joint_attention_kwargs,
            )

            # controlnet residual
            if controlnet_single_block_samples is not None:
                interval_control = len(self.single_transformer_blocks) / len(controlnet_single_block_samples)
                interval_control = int(np.ceil(interval_control))
                hidden_states[:, encoder_hidden_states.shape[1] :, ...] = (
                    hidden_states[:, encoder_hidden_states.shape[1] :, ...]
                    + controlnet_single_block_samples[index_block // interval_control]
                )

        hidden_states = hidden_states[:, encoder_hidden_states.shape[1] :, ...]

        hidden_states = self.norm_out(hidden_states, temb)
        output = self.proj_out(hidden_states)

        if not return_dict:
            return (output,)

        return Transformer2DModelOutput(sample=output)


def setup(pipeline_transformer):
    return torch.compile(pipeline_transformer, mode="reduce-overhead", fullgraph=True)


def make():
    torch.manual_seed(0)
    model = FluxTransformer2DModel().eval()
    hidden_states = torch.randn(1, 4, 8)
    encoder_hidden_states = torch.randn(1, 3, 16)
    pooled = torch.randn(1, 8)
    timestep = torch.tensor([0.5])
    img_ids = torch.zeros(4, 3)
    img_ids[:, 1] = torch.arange(4)
    txt_ids = torch.zeros(3, 3)
    block_samples = [torch.randn(1, 4, 8) for _ in range(2)]
    single_samples = [torch.randn(1, 4, 8)]
    controlnet = (hidden_states, encoder_hidden_states, pooled, timestep, img_ids, txt_ids, None, None,
                  block_samples, single_samples, False, False)
    xlabs = (hidden_states, encoder_hidden_states, pooled, timestep, img_ids, txt_ids, None, None,
             block_samples, None, False, True)
    plain = (hidden_states, encoder_hidden_states, pooled, timestep, img_ids[None], txt_ids[None], None,
             {"scale": 1.0}, None, None, False, False)
    return model, [controlnet, xlabs, plain]
