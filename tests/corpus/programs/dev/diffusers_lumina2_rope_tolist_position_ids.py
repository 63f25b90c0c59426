"""diffusers Lumina2 transformer: the rotary embedder turns the caption mask into Python ints with `attention_mask.sum(dim=1).tolist()`, then every per-sample slice and the joint sequence assembly uses them.

Source: huggingface/diffusers@v0.42.1:src/diffusers/models/transformers/transformer_lumina2.py:233-318,461-563; src/diffusers/models/embeddings.py:885-949,952-1010
Kept: Lumina2RotaryPosEmbed verbatim (_precompute_freqs_cis with the float64
dtype choice, _get_freqs_cis gathering per axis, forward's
`l_effective_cap_len = attention_mask.sum(dim=1).tolist()`, position ids per
sample, the caption/image freqs split by slicing), get_1d_rotary_pos_embed
(the complex torch.polar branch Lumina uses), apply_rotary_emb's complex path,
and the transformer forward's use of the lengths: `max(seq_lengths)`,
`len(set(seq_lengths)) > 1`, the joint mask/hidden-states assembly and the
per-sample unpatchify.
Simplified: time/caption embedding, x_embedder and the refiners are Linear
layers; one joint attention layer applies the rotary embedding and SDPA;
hidden 16 (2 heads of 8, axes 4/2/2), patch 2, 4x4 latents, 5 caption tokens.
"""
from types import SimpleNamespace

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn


def get_1d_rotary_pos_embed(
    dim: int,
    pos,
    theta: float = 10000.0,
    use_real=False,
    linear_factor=1.0,
    ntk_factor=1.0,
    repeat_interleave_real=True,
    freqs_dtype=torch.float32,  #  torch.float32, torch.float64 (flux)
):
    assert dim % 2 == 0

    if isinstance(pos, int):
        pos = torch.arange(pos)
    if isinstance(pos, np.ndarray):
        pos = torch.from_numpy(pos)  # type: ignore  # [S]

    theta = theta * ntk_factor
    freqs = (
        1.0 / (theta ** (torch.arange(0, dim, 2, dtype=freqs_dtype, device=pos.device) / dim)) / linear_factor
    )  # [D/2]
    freqs = torch.outer(pos, freqs)  # type: ignore   # [S, D/2]
    if use_real and repeat_interleave_real:
        # flux, hunyuan-dit, cogvideox
        freqs_cos = freqs.cos().repeat_interleave(2, dim=1, output_size=freqs.shape[1] * 2).float()  # [S, D]
        freqs_sin = freqs.sin().repeat_interleave(2, dim=1, output_size=freqs.shape[1] * 2).float()  # [S, D]
        return freqs_cos, freqs_sin
    else:
        # lumina
        freqs_cis = torch.polar(torch.ones_like(freqs), freqs)  # complex64     # [S, D/2]
        return freqs_cis


def apply_rotary_emb(x: torch.Tensor, freqs_cis: torch.Tensor, use_real: bool = False, sequence_dim: int = 2):
    # used for lumina
    x_rotated = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2))
    freqs_cis = freqs_cis.unsqueeze(2)
    x_out = torch.view_as_real(x_rotated * freqs_cis).flatten(3)

    return x_out.type_as(x)


class Lumina2RotaryPosEmbed(nn.Module):
    def __init__(self, theta: int, axes_dim: list, axes_lens: list = (300, 512, 512), patch_size: int = 2):
        super().__init__()
        self.theta = theta
        self.axes_dim = axes_dim
        self.axes_lens = axes_lens
        self.patch_size = patch_size

        self.freqs_cis = self._precompute_freqs_cis(axes_dim, axes_lens, theta)

    def _precompute_freqs_cis(self, axes_dim: list, axes_lens: list, theta: int) -> list:
        freqs_cis = []
        freqs_dtype = torch.float32 if torch.backends.mps.is_available() else torch.float64
        for i, (d, e) in enumerate(zip(axes_dim, axes_lens)):
            emb = get_1d_rotary_pos_embed(d, e, theta=self.theta, freqs_dtype=freqs_dtype)
            freqs_cis.append(emb)
        return freqs_cis

    def _get_freqs_cis(self, ids: torch.Tensor) -> torch.Tensor:
        device = ids.device
        if ids.device.type == "mps":
            ids = ids.to("cpu")

        result = []
        for i in range(len(self.axes_dim)):
            freqs = self.freqs_cis[i].to(ids.device)
            index = ids[:, :, i : i + 1].repeat(1, 1, freqs.shape[-1]).to(torch.int64)
            result.append(torch.gather(freqs.unsqueeze(0).repeat(index.shape[0], 1, 1), dim=1, index=index))
        return torch.cat(result, dim=-1).to(device)

    def forward(self, hidden_states: torch.Tensor, attention_mask: torch.Tensor):
        batch_size, channels, height, width = hidden_states.shape
        p = self.patch_size
        post_patch_height, post_patch_width = height // p, width // p
        image_seq_len = post_patch_height * post_patch_width
        device = hidden_states.device

        encoder_seq_len = attention_mask.shape[1]
        l_effective_cap_len = attention_mask.sum(dim=1).tolist()
        seq_lengths = [cap_seq_len + image_seq_len for cap_seq_len in l_effective_cap_len]
        max_seq_len = max(seq_lengths)

        # Create position IDs
        position_ids = torch.zeros(batch_size, max_seq_len, 3, dtype=torch.int32, device=device)

        for i, (cap_seq_len, seq_len) in enumerate(zip(l_effective_cap_len, seq_lengths)):
            # add caption position ids
            position_ids[i, :cap_seq_len, 0] = torch.arange(cap_seq_len, dtype=torch.int32, device=device)
            position_ids[i, cap_seq_len:seq_len, 0] = cap_seq_len

            # add image position ids
            row_ids = (
                torch.arange(post_patch_height, dtype=torch.int32, device=device)
                .view(-1, 1)
                .repeat(1, post_patch_width)
                .flatten()
            )
            col_ids = (
                torch.arange(post_patch_width, dtype=torch.int32, device=device)
                .view(1, -1)
                .repeat(post_patch_height, 1)
                .flatten()
            )
            position_ids[i, cap_seq_len:seq_len, 1] = row_ids
            position_ids[i, cap_seq_len:seq_len, 2] = col_ids

        # Get combined rotary embeddings
        freqs_cis = self._get_freqs_cis(position_ids)

        # create separate rotary embeddings for captions and images
        cap_freqs_cis = torch.zeros(
            batch_size, encoder_seq_len, freqs_cis.shape[-1], device=device, dtype=freqs_cis.dtype
        )
        img_freqs_cis = torch.zeros(
            batch_size, image_seq_len, freqs_cis.shape[-1], device=device, dtype=freqs_cis.dtype
        )

        for i, (cap_seq_len, seq_len) in enumerate(zip(l_effective_cap_len, seq_lengths)):
            cap_freqs_cis[i, :cap_seq_len] = freqs_cis[i, :cap_seq_len]
            img_freqs_cis[i, :image_seq_len] = freqs_cis[i, cap_seq_len:seq_len]

        # image patch embeddings
        hidden_states = (
            hidden_states.view(batch_size, channels, post_patch_height, p, post_patch_width, p)
            .permute(0, 2, 4, 3, 5, 1)
            .flatten(3)
            .flatten(1, 2)
        )

        return hidden_states, cap_freqs_cis, img_freqs_cis, freqs_cis, l_effective_cap_len, seq_lengths


class JointAttentionLayer(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.to_qkv = nn.Linear(dim, 3 * dim)
        self.to_out = nn.Linear(dim, dim)

    def forward(self, hidden_states, attention_mask, image_rotary_emb, temb):
        b, n, d = hidden_states.shape
        q, k, v = self.to_qkv(hidden_states + temb[:, None]).view(b, n, 3, self.heads, -1).unbind(2)
        q = apply_rotary_emb(q, image_rotary_emb)
        k = apply_rotary_emb(k, image_rotary_emb)
        if attention_mask is not None:
            attention_mask = attention_mask[:, None, None, :]
        out = F.scaled_dot_product_attention(
            q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), attn_mask=attention_mask
        )
        return hidden_states + self.to_out(out.transpose(1, 2).reshape(b, n, d))


class Lumina2Transformer2DModel(nn.Module):
    def __init__(self, patch_size=2, in_channels=4, hidden_size=16, num_attention_heads=2, cap_feat_dim=6,
                 axes_dim_rope=(4, 2, 2), axes_lens=(32, 16, 16)):
        super().__init__()
        self.config = SimpleNamespace(patch_size=patch_size, hidden_size=hidden_size)
        self.out_channels = in_channels
        self.rope_embedder = Lumina2RotaryPosEmbed(
            theta=10000, axes_dim=axes_dim_rope, axes_lens=axes_lens, patch_size=patch_size
        )
        self.x_embedder = nn.Linear(patch_size * patch_size * in_channels, hidden_size)
        self.caption_embedder = nn.Linear(cap_feat_dim, hidden_size)
        self.time_proj = nn.Linear(1, hidden_size)
        self.context_refiner = nn.ModuleList([nn.Linear(hidden_size, hidden_size)])
        self.noise_refiner = nn.ModuleList([nn.Linear(hidden_size, hidden_size)])
        self.layers = nn.ModuleList([JointAttentionLayer(hidden_size, num_attention_heads)])
        self.norm_out = nn.LayerNorm(hidden_size)
        self.proj_out = nn.Linear(hidden_size, patch_size * patch_size * in_channels)

    def forward(self, hidden_states, timestep, encoder_hidden_states, encoder_attention_mask, return_dict=True):
        # 1. Condition, positional & patch embedding
        batch_size, _, height, width = hidden_states.shape

        temb = self.time_proj(timestep[:, None].to(hidden_states.dtype))
        encoder_hidden_states = self.caption_embedder(encoder_hidden_states)

        (
            hidden_states,
            context_rotary_emb,
            noise_rotary_emb,
            rotary_emb,
            encoder_seq_lengths,
            seq_lengths,
        ) = self.rope_embedder(hidden_states, encoder_attention_mask)

        hidden_states = self.x_embedder(hidden_states)

        # 2. Context & noise refinement
        for layer in self.context_refiner:
            encoder_hidden_states = layer(encoder_hidden_states)

        for layer in self.noise_refiner:
            hidden_states = layer(hidden_states)

        # 3. Joint Transformer blocks
        max_seq_len = max(seq_lengths)
        use_mask = len(set(seq_lengths)) > 1

        attention_mask = hidden_states.new_zeros(batch_size, max_seq_len, dtype=torch.bool)
        joint_hidden_states = hidden_states.new_zeros(batch_size, max_seq_len, self.config.hidden_size)
        for i, (encoder_seq_len, seq_len) in enumerate(zip(encoder_seq_lengths, seq_lengths)):
            attention_mask[i, :seq_len] = True
            joint_hidden_states[i, :encoder_seq_len] = encoder_hidden_states[i, :encoder_seq_len]
            joint_hidden_states[i, encoder_seq_len:seq_len] = hidden_states[i]

        hidden_states = joint_hidden_states

        for layer in self.layers:
            hidden_states = layer(hidden_states, attention_mask if use_mask else None, rotary_emb, temb)

        # 4. Output norm & projection
        hidden_states = self.proj_out(self.norm_out(hidden_states))

        # 5. Unpatchify
        p = self.config.patch_size
        output = []
        for i, (encoder_seq_len, seq_len) in enumerate(zip(encoder_seq_lengths, seq_lengths)):
            output.append(
                hidden_states[i][encoder_seq_len:seq_len]
                .view(height // p, width // p, p, p, self.out_channels)
                .permute(4, 0, 2, 1, 3)
                .flatten(3, 4)
                .flatten(1, 2)
            )
        output = torch.stack(output, dim=0)

        if not return_dict:
            return (output,)
        return {"sample": output}


transformer = torch.compile(Lumina2Transformer2DModel().eval(), mode="max-autotune-no-cudagraphs")


def make():
    torch.manual_seed(0)
    latents, timestep, captions = torch.randn(2, 4, 4, 4), torch.tensor([0.5, 0.5]), torch.randn(2, 5, 6)
    ragged = torch.tensor([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]])
    full = torch.ones(2, 5, dtype=torch.int64)
    return Lumina2Transformer2DModel().eval(), [(latents, timestep, captions, ragged), (latents, timestep, captions, full, False)]
