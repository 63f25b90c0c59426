"""torchvision VisionTransformer: torch._assert on image size with f-string messages, class token, encoder with input-dim assert (no break).

Source: pytorch/vision@v0.29.2:torchvision/models/vision_transformer.py:154-157,268-305
Kept: _process_input (the two torch._assert with formatted messages, n_h/n_w,
conv_proj, reshape/permute), forward (class token expand, cat, encoder, the
class-token slice, heads), Encoder.forward's ndim torch._assert.
Simplified: the encoder body is one linear layer; image 8, patch 4, hidden 8.
"""
import torch
from torch import nn


class Encoder(nn.Module):
    def __init__(self, hidden_dim=8, seq_length=5):
        super().__init__()
        self.pos_embedding = nn.Parameter(torch.empty(1, seq_length, hidden_dim).normal_(std=0.02))
        self.layers = nn.Linear(hidden_dim, hidden_dim)
        self.ln = nn.LayerNorm(hidden_dim)

    def forward(self, input: torch.Tensor):
        torch._assert(input.dim() == 3, f"Expected (batch_size, seq_length, hidden_dim) got {input.shape}")
        input = input + self.pos_embedding
        return self.ln(self.layers(input))


class VisionTransformer(nn.Module):
    def __init__(self, image_size=8, patch_size=4, hidden_dim=8, num_classes=3):
        super().__init__()
        self.image_size = image_size
        self.patch_size = patch_size
        self.hidden_dim = hidden_dim
        self.conv_proj = nn.Conv2d(3, hidden_dim, kernel_size=patch_size, stride=patch_size)
        self.class_token = nn.Parameter(torch.zeros(1, 1, hidden_dim))
        self.encoder = Encoder(hidden_dim, (image_size // patch_size) ** 2 + 1)
        self.heads = nn.Linear(hidden_dim, num_classes)

    def _process_input(self, x: torch.Tensor) -> torch.Tensor:
        n, c, h, w = x.shape
        p = self.patch_size
        torch._assert(h == self.image_size, f"Wrong image height! Expected {self.image_size} but got {h}!")
        torch._assert(w == self.image_size, f"Wrong image width! Expected {self.image_size} but got {w}!")
        n_h = h // p
        n_w = w // p
        x = self.conv_proj(x)
        x = x.reshape(n, self.hidden_dim, n_h * n_w)
        x = x.permute(0, 2, 1)
        return x

    def forward(self, x: torch.Tensor):
        x = self._process_input(x)
        n = x.shape[0]
        batch_class_token = self.class_token.expand(n, -1, -1)
        x = torch.cat([batch_class_token, x], dim=1)
        x = self.encoder(x)
        x = x[:, 0]
        x = self.heads(x)
        return x


def vit_b_16():
    return VisionTransformer()


model = torch.compile(vit_b_16().eval(), mode="max-autotune")


def make():
    torch.manual_seed(0)
    return vit_b_16().eval(), [(torch.randn(2, 3, 8, 8),)]
