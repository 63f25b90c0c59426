"""diffusers HunyuanVideo FramePack transformer: the text mask's per-sample lengths (an int tensor) become slice bounds, `encoder_hidden_states[:, : lengths[0]]` for batch 1 and `attention_mask[i, : lengths[i]] = True` in a loop otherwise.

Source: huggingface/diffusers@v0.42.1:src/diffusers/models/transformers/transformer_hunyuan_video_framepack.py:204-380
Kept: forward's shape bookkeeping (post-patch sizes, original_context_length,
default indices_latents), the clean-latents packing of _pack_history_states
(concatenated before the noisy latents), the image projection concatenated
before the text with an all-ones mask, the effective lengths via
`sum(dim=1, dtype=torch.int)`, the batch_size == 1 slice vs the per-sample mask
loop, the gradient-checkpointing switch over the dual- and single-stream block
lists, the `[:, -original_context_length:]` tail, and the unpatchify
reshape/permute/flatten chain.
Simplified: the patch embedders are Conv3d/Linear, time and text embedders are
Linear layers, rotary embeddings are left out, and each block is one masked
SDPA over the joint sequence; 1 dual-stream and 1 single-stream block, inner
dim 8.
"""
from types import SimpleNamespace

import torch
import torch.nn.functional as F
from torch import nn


class JointBlock(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.norm = nn.LayerNorm(dim)
        self.to_qkv = nn.Linear(dim, 3 * dim)
        self.to_out = nn.Linear(dim, dim)

    def forward(self, hidden_states, encoder_hidden_states, temb, attention_mask=None, image_rotary_emb=None):
        n_latent = hidden_states.shape[1]
        x = torch.cat([hidden_states, encoder_hidden_states], dim=1)
        b, n, d = x.shape
        q, k, v = self.to_qkv(self.norm(x) + temb[:, None]).view(b, n, 3, self.heads, -1).unbind(2)
        out = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2),
                                             attn_mask=attention_mask)
        x = x + self.to_out(out.transpose(1, 2).reshape(b, n, d))
        return x[:, :n_latent], x[:, n_latent:]


class HunyuanVideoFramepackTransformer3DModel(nn.Module):
    def __init__(self, in_channels=4, num_attention_heads=2, attention_head_dim=4, patch_size=2, patch_size_t=1,
                 text_embed_dim=6, pooled_projection_dim=5, image_proj_dim=7):
        super().__init__()
        inner_dim = num_attention_heads * attention_head_dim
        self.config = SimpleNamespace(patch_size=patch_size, patch_size_t=patch_size_t)
        self.gradient_checkpointing = False
        self.x_embedder = nn.Conv3d(in_channels, inner_dim, (patch_size_t, patch_size, patch_size),
                                    stride=(patch_size_t, patch_size, patch_size))
        self.clean_x_embedder = nn.Conv3d(in_channels, inner_dim, (patch_size_t, patch_size, patch_size),
                                          stride=(patch_size_t, patch_size, patch_size))
        self.context_embedder = nn.Linear(text_embed_dim, inner_dim)
        self.time_text_embed = nn.Linear(1 + pooled_projection_dim, inner_dim)
        self.image_projection = nn.Linear(image_proj_dim, inner_dim)
        self.transformer_blocks = nn.ModuleList([JointBlock(inner_dim, num_attention_heads)])
        self.single_transformer_blocks = nn.ModuleList([JointBlock(inner_dim, num_attention_heads)])
        self.norm_out = nn.LayerNorm(inner_dim)
        self.proj_out = nn.Linear(inner_dim, patch_size_t * patch_size * patch_size * in_channels)

    def _patchify(self, embedder, latents):
        return embedder(latents).flatten(2).transpose(1, 2)

    def _pack_history_states(self, hidden_states, latents_clean=None):
        if latents_clean is not None:
            hidden_states = torch.cat([latents_clean, hidden_states], dim=1)
        return hidden_states

    def forward(
        self,
        hidden_states,
        timestep,
        encoder_hidden_states,
        encoder_attention_mask,
        pooled_projections,
        image_embeds,
        indices_latents=None,
        latents_clean=None,
        return_dict=True,
    ):
        batch_size, num_channels, num_frames, height, width = hidden_states.shape
        p, p_t = self.config.patch_size, self.config.patch_size_t
        post_patch_num_frames = num_frames // p_t
        post_patch_height = height // p
        post_patch_width = width // p
        original_context_length = post_patch_num_frames * post_patch_height * post_patch_width

        if indices_latents is None:
            indices_latents = torch.arange(0, num_frames).unsqueeze(0).expand(batch_size, -1)

        hidden_states = self._patchify(self.x_embedder, hidden_states)
        if latents_clean is not None:
            latents_clean = self._patchify(self.clean_x_embedder, latents_clean)

        hidden_states = self._pack_history_states(hidden_states, latents_clean)

        temb = self.time_text_embed(torch.cat([timestep[:, None].float(), pooled_projections], dim=-1))
        encoder_hidden_states = self.context_embedder(encoder_hidden_states)

        encoder_hidden_states_image = self.image_projection(image_embeds)
        attention_mask_image = encoder_attention_mask.new_ones((batch_size, encoder_hidden_states_image.shape[1]))

        # must cat before (not after) encoder_hidden_states, due to attn masking
        encoder_hidden_states = torch.cat([encoder_hidden_states_image, encoder_hidden_states], dim=1)
        encoder_attention_mask = torch.cat([attention_mask_image, encoder_attention_mask], dim=1)

        latent_sequence_length = hidden_states.shape[1]
        condition_sequence_length = encoder_hidden_states.shape[1]
        sequence_length = latent_sequence_length + condition_sequence_length
        attention_mask = torch.zeros(
            batch_size, sequence_length, device=hidden_states.device, dtype=torch.bool
        )  # [B, N]
        effective_condition_sequence_length = encoder_attention_mask.sum(dim=1, dtype=torch.int)  # [B,]
        effective_sequence_length = latent_sequence_length + effective_condition_sequence_length

        if batch_size == 1:
            encoder_hidden_states = encoder_hidden_states[:, : effective_condition_sequence_length[0]]
            attention_mask = None
        else:
            for i in range(batch_size):
                attention_mask[i, : effective_sequence_length[i]] = True
            # [B, 1, 1, N], for broadcasting across attention heads
            attention_mask = attention_mask.unsqueeze(1).unsqueeze(1)

        if torch.is_grad_enabled() and self.gradient_checkpointing:
            for block in self.transformer_blocks:
                hidden_states, encoder_hidden_states = torch.utils.checkpoint.checkpoint(
                    block, hidden_states, encoder_hidden_states, temb, attention_mask, None, use_reentrant=False
                )

            for block in self.single_transformer_blocks:
                hidden_states, encoder_hidden_states = torch.utils.checkpoint.checkpoint(
                    block, hidden_states, encoder_hidden_states, temb, attention_mask, None, use_reentrant=False
                )

        else:
            for block in self.transformer_blocks:
                hidden_states, encoder_hidden_states = block(
                    hidden_states, encoder_hidden_states, temb, attention_mask, None
                )

            for block in self.single_transformer_blocks:
                hidden_states, encoder_hidden_states = block(
                    hidden_states, encoder_hidden_states, temb, attention_mask, None
                )

        hidden_states = hidden_states[:, -original_context_length:]
        hidden_states = self.norm_out(hidden_states)
        hidden_states = self.proj_out(hidden_states)

        hidden_states = hidden_states.reshape(
            batch_size, post_patch_num_frames, post_patch_height, post_patch_width, -1, p_t, p, p
        )
        hidden_states = hidden_states.permute(0, 4, 1, 5, 2, 6, 3, 7)
        hidden_states = hidden_states.flatten(6, 7).flatten(4, 5).flatten(2, 3)

        if not return_dict:
            return (hidden_states,)
        return {"sample": hidden_states}


transformer = torch.compile(HunyuanVideoFramepackTransformer3DModel().eval())


def make():
    torch.manual_seed(0)

    def inputs(batch_size, text_mask):
        return (
            torch.randn(batch_size, 4, 2, 4, 4),
            torch.full((batch_size,), 500),
            torch.randn(batch_size, 5, 6),
            text_mask,
            torch.randn(batch_size, 5),
            torch.randn(batch_size, 2, 7),
        )

    single = inputs(1, torch.tensor([[1, 1, 1, 0, 0]]))
    batched = inputs(2, torch.tensor([[1, 1, 1, 1, 0], [1, 1, 0, 0, 0]]))
    with_clean = (*batched, None, torch.randn(2, 4, 1, 4, 4), False)
    return HunyuanVideoFramepackTransformer3DModel().eval(), [single, batched, with_clean]
