"""diffusers DiTTransformer2DModel.forward: per-block `torch.is_grad_enabled() and self.gradient_checkpointing` switch to checkpointing, output conditioning read through `self.transformer_blocks[0].norm1.emb`, unpatchify with `int(shape[1] ** 0.5)` and einsum, return_dict.

Source: huggingface/diffusers@11bf2cf1d149c47a210912f0b446e701b81e923d:src/diffusers/models/transformers/dit_transformer_2d.py:30-226
Kept: __init__ validation of norm_type / num_embeds_ada_norm, the
config plumbing (self.config.*, inner_dim, out_channels, patch_size), the
forward exactly (block loop with the checkpointing branch calling
self._gradient_checkpointing_func with positional Nones, the final
AdaLN-style shift/scale from the first block's norm1.emb, proj_out_2,
unpatchify, Transformer2DModelOutput / tuple return); ModelMixin's
enable_gradient_checkpointing setting _gradient_checkpointing_func to
torch.utils.checkpoint.checkpoint (use_reentrant=False), as DiT training
scripts call it. (The snapshot spells `nn.Modulelist`; written ModuleList.)
Simplified: PatchEmbed, BasicTransformerBlock(norm_type="ada_norm_zero"),
AdaLayerNormZero and CombinedTimestepLabelEmbeddings are small stand-ins
with the same call signatures (conv patchify + fixed pos embed; AdaLN-zero
gates around nn.MultiheadAttention and a GELU MLP; sinusoidal timestep
MLP + label table with train-time label drop); 2 layers, 2 heads of 4,
8x8 latents with 4 channels, patch 2.
"""
import functools
import math
from dataclasses import dataclass
from typing import Any, Optional

import torch
import torch.nn.functional as F
import torch.utils.checkpoint
from torch import nn


@dataclass
class Transformer2DModelOutput:
    sample: torch.Tensor


class FrozenConfig:
    def __init__(self, **kwargs):
        self.__dict__.update(kwargs)


def get_timestep_embedding(timesteps, embedding_dim, flip_sin_to_cos=True, downscale_freq_shift=1, max_period=10000):
    half_dim = embedding_dim // 2
    exponent = -math.log(max_period) * torch.arange(start=0, end=half_dim, dtype=torch.float32, device=timesteps.device)
    exponent = exponent / (half_dim - downscale_freq_shift)
    emb = torch.exp(exponent)
    emb = timesteps[:, None].float() * emb[None, :]
    emb = torch.cat([torch.sin(emb), torch.cos(emb)], dim=-1)
    if flip_sin_to_cos:
        emb = torch.cat([emb[:, half_dim:], emb[:, :half_dim]], dim=-1)
    return emb


class LabelEmbedding(nn.Module):
    def __init__(self, num_classes, hidden_size, dropout_prob):
        super().__init__()
        use_cfg_embedding = dropout_prob > 0
        self.embedding_table = nn.Embedding(num_classes + use_cfg_embedding, hidden_size)
        self.num_classes = num_classes
        self.dropout_prob = dropout_prob

    def token_drop(self, labels, force_drop_ids=None):
        if force_drop_ids is None:
            drop_ids = torch.rand(labels.shape[0], device=labels.device) < self.dropout_prob
        else:
            drop_ids = torch.tensor(force_drop_ids == 1)
        labels = torch.where(drop_ids, self.num_classes, labels)
        return labels

    def forward(self, labels, force_drop_ids=None):
        use_dropout = self.dropout_prob > 0
        if (self.training and use_dropout) or (force_drop_ids is not None):
            labels = self.token_drop(labels, force_drop_ids)
        return self.embedding_table(labels)


class CombinedTimestepLabelEmbeddings(nn.Module):
    def __init__(self, num_classes, embedding_dim, class_dropout_prob=0.1):
        super().__init__()
        self.embedding_dim = embedding_dim
        self.timestep_embedder = nn.Sequential(nn.Linear(256, embedding_dim), nn.SiLU(), nn.Linear(embedding_dim, embedding_dim))
        self.class_embedder = LabelEmbedding(num_classes, embedding_dim, class_dropout_prob)

    def forward(self, timestep, class_labels, hidden_dtype=None):
        timesteps_proj = get_timestep_embedding(timestep, 256)
        timesteps_emb = self.timestep_embedder(timesteps_proj.to(dtype=hidden_dtype))
        class_labels = self.class_embedder(class_labels)
        return timesteps_emb + class_labels


class AdaLayerNormZero(nn.Module):
    def __init__(self, embedding_dim, num_embeddings):
        super().__init__()
        self.emb = CombinedTimestepLabelEmbeddings(num_embeddings, embedding_dim)
        self.silu = nn.SiLU()
        self.linear = nn.Linear(embedding_dim, 6 * embedding_dim, bias=True)
        self.norm = nn.LayerNorm(embedding_dim, elementwise_affine=False, eps=1e-6)

    def forward(self, x, timestep=None, class_labels=None, hidden_dtype=None):
        emb = self.linear(self.silu(self.emb(timestep, class_labels, hidden_dtype=hidden_dtype)))
        shift_msa, scale_msa, gate_msa, shift_mlp, scale_mlp, gate_mlp = emb.chunk(6, dim=1)
        x = self.norm(x) * (1 + scale_msa[:, None]) + shift_msa[:, None]
        return x, gate_msa, shift_mlp, scale_mlp, gate_mlp


class BasicTransformerBlock(nn.Module):
    def __init__(self, dim, num_attention_heads, attention_head_dim, dropout=0.0, activation_fn="gelu-approximate",
                 num_embeds_ada_norm=None, attention_bias=False, upcast_attention=False, norm_type="ada_norm_zero",
                 norm_elementwise_affine=True, norm_eps=1e-5):
        super().__init__()
        self.norm_type = norm_type
        self.norm1 = AdaLayerNormZero(dim, num_embeds_ada_norm)
        self.attn1 = nn.MultiheadAttention(dim, num_attention_heads, dropout=dropout, bias=attention_bias, batch_first=True)
        self.norm3 = nn.LayerNorm(dim, norm_eps, norm_elementwise_affine)
        self.ff = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(approximate="tanh"), nn.Linear(4 * dim, dim))

    def forward(self, hidden_states, attention_mask=None, encoder_hidden_states=None, encoder_attention_mask=None,
                timestep=None, cross_attention_kwargs=None, class_labels=None):
        norm_hidden_states, gate_msa, shift_mlp, scale_mlp, gate_mlp = self.norm1(
            hidden_states, timestep, class_labels, hidden_dtype=hidden_states.dtype
        )
        attn_output, _ = self.attn1(norm_hidden_states, norm_hidden_states, norm_hidden_states, need_weights=False)
        attn_output = gate_msa.unsqueeze(1) * attn_output
        hidden_states = attn_output + hidden_states
        norm_hidden_states = self.norm3(hidden_states)
        norm_hidden_states = norm_hidden_states * (1 + scale_mlp[:, None]) + shift_mlp[:, None]
        ff_output = self.ff(norm_hidden_states)
        ff_output = gate_mlp.unsqueeze(1) * ff_output
        hidden_states = ff_output + hidden_states
        return hidden_states


class PatchEmbed(nn.Module):
    def __init__(self, height=8, width=8, patch_size=2, in_channels=4, embed_dim=8):
        super().__init__()
        self.proj = nn.Conv2d(in_channels, embed_dim, kernel_size=patch_size, stride=patch_size)
        num_patches = (height // patch_size) * (width // patch_size)
        self.register_buffer("pos_embed", torch.randn(1, num_patches, embed_dim) * 0.02, persistent=False)

    def forward(self, latent):
        latent = self.proj(latent)
        latent = latent.flatten(2).transpose(1, 2)  # BCHW -> BNC
        return latent + self.pos_embed


class DiTTransformer2DModel(nn.Module):
    _supports_gradient_checkpointing = True

    def __init__(
        self,
        num_attention_heads: int = 16,
        attention_head_dim: int = 72,
        in_channels: int = 4,
        out_channels: Optional[int] = None,
        num_layers: int = 28,
        dropout: float = 0.0,
        norm_num_groups: int = 32,
        attention_bias: bool = True,
        sample_size: int = 32,
        patch_size: int = 2,
        activation_fn: str = "gelu-approximate",
        num_embeds_ada_norm: Optional[int] = 1000,
        upcast_attention: bool = False,
        norm_type: str = "ada_norm_zero",
        norm_elementwise_affine: bool = False,
        norm_eps: float = 1e-5,
    ):
        super().__init__()
        self.config = FrozenConfig(
            num_attention_heads=num_attention_heads, attention_head_dim=attention_head_dim, in_channels=in_channels,
            out_channels=out_channels, num_layers=num_layers, dropout=dropout, norm_num_groups=norm_num_groups,
            attention_bias=attention_bias, sample_size=sample_size, patch_size=patch_size, activation_fn=activation_fn,
            num_embeds_ada_norm=num_embeds_ada_norm, upcast_attention=upcast_attention, norm_type=norm_type,
            norm_elementwise_affine=norm_elementwise_affine, norm_eps=norm_eps,
        )

        # Validate inputs.
        if norm_type != "ada_norm_zero":
            raise NotImplementedError(
                f"Forward pass is not implemented when `patch_size` is not None and `norm_type` is '{norm_type}'."
            )
        elif norm_type == "ada_norm_zero" and num_embeds_ada_norm is None:
            raise ValueError(
                f"When using a `patch_size` and this `norm_type` ({norm_type}), `num_embeds_ada_norm` cannot be None."
            )

        # Set some common variables used across the board.
        self.attention_head_dim = attention_head_dim
        self.inner_dim = self.config.num_attention_heads * self.config.attention_head_dim
        self.out_channels = in_channels if out_channels is None else out_channels
        self.gradient_checkpointing = False

        # 2. Initialize the position embedding and transformer blocks.
        self.height = self.config.sample_size
        self.width = self.config.sample_size

        self.patch_size = self.config.patch_size
        self.pos_embed = PatchEmbed(
            height=self.config.sample_size,
            width=self.config.sample_size,
            patch_size=self.config.patch_size,
            in_channels=self.config.in_channels,
            embed_dim=self.inner_dim,
        )

        self.transformer_blocks = nn.ModuleList(
            [
                BasicTransformerBlock(
                    self.inner_dim,
                    self.config.num_attention_heads,
                    self.config.attention_head_dim,
                    dropout=self.config.dropout,
                    activation_fn=self.config.activation_fn,
                    num_embeds_ada_norm=self.config.num_embeds_ada_norm,
                    attention_bias=self.config.attention_bias,
                    upcast_attention=self.config.upcast_attention,
                    norm_type=norm_type,
                    norm_elementwise_affine=self.config.norm_elementwise_affine,
                    norm_eps=self.config.norm_eps,
                )
                for _ in range(self.config.num_layers)
            ]
        )

        # 3. Output blocks.
        self.norm_out = nn.LayerNorm(self.inner_dim, elementwise_affine=False, eps=1e-6)
        self.proj_out_1 = nn.Linear(self.inner_dim, 2 * self.inner_dim)
        self.proj_out_2 = nn.Linear(
            self.inner_dim, self.config.patch_size * self.config.patch_size * self.out_channels
        )

    def enable_gradient_checkpointing(self):
        self._gradient_checkpointing_func = functools.partial(torch.utils.checkpoint.checkpoint, use_reentrant=False)
        self.gradient_checkpointing = True

    def forward(
        self,
        hidden_states: torch.Tensor,
        timestep: Optional[torch.LongTensor] = None,
        class_labels: Optional[torch.LongTensor] = None,
        cross_attention_kwargs: dict = None,
        return_dict: bool = True,
    ):
        # 1. Input
        height, width = hidden_states.shape[-2] // self.patch_size, hidden_states.shape[-1] // self.patch_size
        hidden_states = self.pos_embed(hidden_states)

        # 2. Blocks
        for block in self.transformer_blocks:
            if torch.is_grad_enabled() and self.gradient_checkpointing:
                hidden_states = self._gradient_checkpointing_func(
                    block,
                    hidden_states,
                    None,
                    None,
                    None,
                    timestep,
                    cross_attention_kwargs,
                    class_labels,
                )
            else:
                hidden_states = block(
                    hidden_states,
                    attention_mask=None,
                    encoder_hidden_states=None,
                    encoder_attention_mask=None,
                    timestep=timestep,
                    cross_attention_kwargs=cross_attention_kwargs,
                    class_labels=class_labels,
                )

        # 3. Output
        conditioning = self.transformer_blocks[0].norm1.emb(timestep, class_labels, hidden_dtype=hidden_states.dtype)
        shift, scale = self.proj_out_1(F.silu(conditioning)).chunk(2, dim=1)
        hidden_states = self.norm_out(hidden_states) * (1 + scale[:, None]) + shift[:, None]
        hidden_states = self.proj_out_2(hidden_states)

        # unpatchify
        height = width = int(hidden_states.shape[1] ** 0.5)
        hidden_states = hidden_states.reshape(
            shape=(-1, height, width, self.patch_size, self.patch_size, self.out_channels)
        )
        hidden_states = torch.einsum("nhwpqc->nchpwq", hidden_states)
        output = hidden_states.reshape(
            shape=(-1, self.out_channels, height * self.patch_size, width * self.patch_size)
        )

        if not return_dict:
            return (output,)

        return Transformer2DModelOutput(sample=output)


def build_transformer():
    model = DiTTransformer2DModel(
        num_attention_heads=2, attention_head_dim=4, in_channels=4, num_layers=2, sample_size=8, patch_size=2,
        num_embeds_ada_norm=10,
    )
    model.enable_gradient_checkpointing()
    model.train()
    return model


transformer = torch.compile(build_transformer())


def make():
    torch.manual_seed(0)
    latents = torch.randn(2, 4, 8, 8)
    timesteps = torch.tensor([10, 500])
    class_labels = torch.tensor([3, 7])
    return build_transformer(), [(latents, timesteps, class_labels), (latents, timesteps, class_labels, None, False)]
