"""Distillation forward hooks that skip capture under `torch.compiler.is_compiling()`, fullgraph.

Source: pytorch/pytorch#173452 (https://github.com/pytorch/pytorch/issues/173452)
Kept: the reporter's hook body (`if torch.compiler.is_compiling(): return`, then
`captured_activations[layer_idx] = output` into an outside dict), hooks on the
Q/K/V projections of each layer for knowledge distillation, and
`torch.compile(..., fullgraph=True)` on the student model.
Simplified: the issue shows only the hook; the student is a two-layer
self-attention stack with q/k/v/o projections of width 8 and 2 heads.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

captured_activations = {}


class SelfAttention(nn.Module):
    def __init__(self, dim, n_heads):
        super().__init__()
        self.n_heads = n_heads
        self.q_proj = nn.Linear(dim, dim)
        self.k_proj = nn.Linear(dim, dim)
        self.v_proj = nn.Linear(dim, dim)
        self.o_proj = nn.Linear(dim, dim)

    def forward(self, x):
        b, t, d = x.shape
        q = self.q_proj(x).view(b, t, self.n_heads, -1).transpose(1, 2)
        k = self.k_proj(x).view(b, t, self.n_heads, -1).transpose(1, 2)
        v = self.v_proj(x).view(b, t, self.n_heads, -1).transpose(1, 2)
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return x + self.o_proj(out.transpose(1, 2).reshape(b, t, d))


class Student(nn.Module):
    def __init__(self, dim=8, n_heads=2, n_layers=2):
        super().__init__()
        self.layers = nn.ModuleList(SelfAttention(dim, n_heads) for _ in range(n_layers))
        self.norm = nn.LayerNorm(dim)

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return self.norm(x)


def make_hook(layer_idx):
    def hook(module, input, output):
        if torch.compiler.is_compiling():
            return  # Skip during tracing
        captured_activations[layer_idx] = output  # Capture during execution
    return hook


def attach_hooks(model):
    handles = []
    for i, layer in enumerate(model.layers):
        for name in ("q_proj", "k_proj", "v_proj"):
            handles.append(getattr(layer, name).register_forward_hook(make_hook(f"{i}.{name}")))
    return handles


def train_step_model():
    model = Student()
    attach_hooks(model)
    return torch.compile(model, fullgraph=True)


def make():
    torch.manual_seed(0)
    model = Student()
    attach_hooks(model)
    x = torch.randn(2, 5, 8)
    return model, [(x,)]
