"""Qwen-Image 2.1 transformer forward: repeat_interleave'd bool image mask and a RoPE that walks it via `.tolist()`.

Source: huggingface/diffusers#14821 (https://github.com/huggingface/diffusers/issues/14821)
Code: huggingface/diffusers src/diffusers/models/transformers/transformer_qwenimage21.py
(`QwenImage21Rope`, the head of `QwenImage21Transformer2DModel.forward`), the
file the thread's traceback points at.
Kept: `QwenImage21Rope` (per-axis positive/negative `rope_params` tables built
in `__init__`; `forward(img_shapes, image_pad_mask, device)` re-assigning
`self.freqs` on the device, `is_image_token = image_pad_mask.tolist()` on the
bool mask, the per-image walk with `is_image_token.index(True, cursor)`,
`range`/`extend` bookkeeping, the trailing-text branch, bool-mask assignment
of the height/width indices, and the final indexed `torch.cat`); the
transformer forward's `img_in`/`txt_in`, `repeats = torch.where(img_mask,
_IMG_TOKENS_PER_SLOT, 1)[0]`, `image_pad_mask = torch.repeat_interleave(...)`,
`math.prod(img_shapes[0][-1])`, the joint sequence built with `cat` +
`repeat_interleave(repeats, dim=1)` + masked assignment of the latents, and
`self.pos_embed(img_shapes[0], image_pad_mask, device=...)`; the reported entry
`transformer.compile(fullgraph=True)`.
Simplified: tables 8192/1024 -> 64/16 positions, axes_dims_rope (2, 2, 4) so
the inner dim is 8; after the RoPE the blocks, timestep modulation, KV cache
and norm_out are replaced by one complex rotary multiply and `proj_out`.
"""
import math

import torch
from torch import nn


class QwenImage21Rope(nn.Module):
    def __init__(self, theta: int, axes_dim: list):
        super().__init__()
        self.theta = theta
        self.axes_dim = axes_dim

        pos_index = torch.arange(64)
        neg_index = torch.arange(16).flip(0) * -1 - 1
        self.freqs = [
            torch.cat([self.rope_params(pos_index, dim, theta), self.rope_params(neg_index, dim, theta)], dim=0)
            for dim in axes_dim
        ]

    def rope_params(self, index: torch.Tensor, dim: int, theta: int = 10000) -> torch.Tensor:
        freqs = torch.outer(index, 1.0 / torch.pow(theta, torch.arange(0, dim, 2).to(torch.float32).div(dim)))
        return torch.polar(torch.ones_like(freqs), freqs)

    def forward(self, img_shapes: list, image_pad_mask: torch.Tensor, device: torch.device) -> torch.Tensor:
        self.freqs = [freq.to(device) for freq in self.freqs]

        frame_index, height_index, width_index = [], [], []
        image_height_index, image_width_index = [], []
        cursor, position = 0, 0
        total_len = image_pad_mask.shape[-1]
        is_image_token = image_pad_mask.tolist()

        for _, height, width in img_shapes:
            block_start = is_image_token.index(True, cursor)
            text_len = block_start - cursor
            frame_index.extend(range(position, position + text_len))
            position += text_len

            cursor = block_start + height * width
            frame_index.extend([position] * (height * width))
            position += max(height, width)

            image_height_index.extend([h for h in range(-(height - height // 2), height // 2) for _ in range(width)])
            image_width_index.extend([w for _ in range(height) for w in range(-(width - width // 2), width // 2)])

        if cursor < total_len:
            frame_index.extend(range(position, position + total_len - cursor))

        frame_index = torch.tensor(frame_index, dtype=torch.long, device=device)
        height_index = frame_index.clone()
        width_index = frame_index.clone()
        height_index[image_pad_mask] = torch.tensor(image_height_index, dtype=torch.long, device=device)
        width_index[image_pad_mask] = torch.tensor(image_width_index, dtype=torch.long, device=device)

        return torch.cat([self.freqs[0][frame_index], self.freqs[1][height_index], self.freqs[2][width_index]], dim=-1)


_IMG_TOKENS_PER_SLOT = 4


class QwenImage21Transformer2DModel(nn.Module):
    def __init__(self, in_channels=4, context_in_dim=6, axes_dims_rope=(2, 2, 4)):
        super().__init__()
        self.inner_dim = sum(axes_dims_rope)
        self.pos_embed = QwenImage21Rope(theta=10000, axes_dim=list(axes_dims_rope))
        self.txt_in = nn.Linear(context_in_dim, self.inner_dim)
        self.img_in = nn.Linear(in_channels, self.inner_dim, bias=False)
        self.proj_out = nn.Linear(self.inner_dim, in_channels, bias=False)

    def forward(self, hidden_states, encoder_hidden_states, img_shapes, img_mask):
        batch_size = hidden_states.shape[0]
        hidden_states = self.img_in(hidden_states)
        encoder_hidden_states = self.txt_in(encoder_hidden_states)

        # Each vision-language image slot stands for 2x2 latent tokens, so expand those positions four-fold and drop
        # the actual latents into them. Samples share a layout, hence the single row.
        repeats = torch.where(img_mask, _IMG_TOKENS_PER_SLOT, 1)[0]
        image_pad_mask = torch.repeat_interleave(img_mask[0], repeats)

        target_tokens = math.prod(img_shapes[0][-1])
        joint_hidden_states = torch.cat(
            [
                encoder_hidden_states,
                encoder_hidden_states.new_zeros(batch_size, target_tokens // 4, encoder_hidden_states.shape[2]),
            ],
            dim=1,
        )
        joint_hidden_states = joint_hidden_states.repeat_interleave(repeats, dim=1)
        joint_hidden_states[:, image_pad_mask] = hidden_states

        rotary_emb = self.pos_embed(img_shapes[0], image_pad_mask, device=hidden_states.device)

        x_rotated = torch.view_as_complex(joint_hidden_states.float().reshape(*joint_hidden_states.shape[:-1], -1, 2))
        joint_hidden_states = torch.view_as_real(x_rotated * rotary_emb).flatten(2).type_as(joint_hidden_states)
        return self.proj_out(joint_hidden_states)


def build():
    transformer = QwenImage21Transformer2DModel()
    transformer.compile(fullgraph=True)
    return transformer


def make():
    torch.manual_seed(0)
    model = QwenImage21Transformer2DModel()
    # 3 text slots + the target image's one slot (a 2x2 latent image)
    img_mask_one = torch.tensor([[False, False, False, True]])
    # text, a 2x2 condition image slot, 2 text slots, then the 2x2 target image slot
    img_mask_two = torch.tensor([[False, True, False, False, True]])
    return model, [
        (torch.randn(1, 4, 4), torch.randn(1, 3, 6), [[(1, 2, 2)]], img_mask_one),
        (torch.randn(1, 8, 4), torch.randn(1, 4, 6), [[(1, 2, 2), (1, 2, 2)]], img_mask_two),
    ]
