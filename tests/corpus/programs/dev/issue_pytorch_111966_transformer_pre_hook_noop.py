"""nn.Transformer with the report's pass-through forward pre-hook (the comparison run).

Source: pytorch/pytorch#111966 (https://github.com/pytorch/pytorch/issues/111966)
The report registers `forward_pre_hook_with_graph_break` on `nn.Transformer()`,
compiles the model with `torch.compile(model)` and runs a short training loop
(`model(src, tgt).sum().backward()`); the graph break in the root module's
pre-hook makes Dynamo skip compiling `nn.Transformer.forward`. The reporter
compares against the commented-out `forward_pre_hook`, which only returns its
input ("without graph break in the hook (compiled function!)"); this program
is that comparison run.
Kept: the hook functions, `run_transformer_1d`'s registration-then-compile
order and training loop, the root-module hook.
Simplified: a small nn.Transformer (d_model 16, 2 heads, 1+1 layers), CPU
instead of cuda, no process-group setup (the report imports dist but never
uses it).
"""
from typing import Any

import torch
import torch.nn as nn
import torch._dynamo


def forward_pre_hook_with_graph_break(module: nn.Module, inp: Any):
    torch._dynamo.graph_break()
    return inp


def forward_pre_hook(module: nn.Module, inp: Any):
    return inp


def build_model():
    model = nn.Transformer(
        d_model=16,
        nhead=2,
        num_encoder_layers=1,
        num_decoder_layers=1,
        dim_feedforward=32,
    )
    # model.register_forward_pre_hook(forward_pre_hook_with_graph_break)
    model.register_forward_pre_hook(forward_pre_hook)
    return model


def run_transformer_1d():
    torch.manual_seed(42)
    model = build_model()
    model = torch.compile(model)
    src = torch.randn((20, 4, 16))
    tgt = torch.randn((10, 4, 16))
    for _ in range(3):
        out = model(src, tgt).sum()
        out.backward()


def make():
    torch.manual_seed(0)
    src = torch.randn((20, 4, 16))
    tgt = torch.randn((10, 4, 16))
    return build_model(), [(src, tgt), (src[:7], tgt[:3])]
