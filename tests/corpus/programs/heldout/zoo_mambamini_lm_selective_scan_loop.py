"""Minimal Mamba LM: embedding -> residual Mamba blocks with a Python-loop selective scan -> tied LM head.

Source: johnma2006/mamba-minimal@02d3b53e1d44de79824dff9036bf10eab07cb2cb:model.py:38-330
Kept: ModelArgs dataclass with its __post_init__ (d_inner, dt_rank='auto',
vocab padding), Mamba (weight-tied lm_head), ResidualBlock, MambaBlock
(in_proj split, causal depthwise conv1d sliced to l, ssm(), selective_scan()
with its per-timestep loop and `torch.zeros((b, d_in, n))` state, the
`if D is not None` term), RMSNorm.
Simplified: einops `rearrange`/`repeat`/`einsum` written as the equivalent
transpose/expand/torch.einsum calls (einops is not importable here); no
from_pretrained; no `from __future__ import annotations` (string annotations
make @dataclass look the module up in sys.modules, absent when loaded by path); d_model 8, 2 layers, vocab 20 (padded to 24), d_state 4.
"""
import math
from dataclasses import dataclass
from typing import Union

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class ModelArgs:
    d_model: int
    n_layer: int
    vocab_size: int
    d_state: int = 16
    expand: int = 2
    dt_rank: Union[int, str] = 'auto'
    d_conv: int = 4
    pad_vocab_size_multiple: int = 8
    conv_bias: bool = True
    bias: bool = False

    def __post_init__(self):
        self.d_inner = int(self.expand * self.d_model)

        if self.dt_rank == 'auto':
            self.dt_rank = math.ceil(self.d_model / 16)

        if self.vocab_size % self.pad_vocab_size_multiple != 0:
            self.vocab_size += (self.pad_vocab_size_multiple
                                - self.vocab_size % self.pad_vocab_size_multiple)


class Mamba(nn.Module):
    def __init__(self, args: ModelArgs):
        """Full Mamba model."""
        super().__init__()
        self.args = args

        self.embedding = nn.Embedding(args.vocab_size, args.d_model)
        self.layers = nn.ModuleList([ResidualBlock(args) for _ in range(args.n_layer)])
        self.norm_f = RMSNorm(args.d_model)

        self.lm_head = nn.Linear(args.d_model, args.vocab_size, bias=False)
        self.lm_head.weight = self.embedding.weight  # Tie output projection to embedding weights.

    def forward(self, input_ids):
        x = self.embedding(input_ids)

        for layer in self.layers:
            x = layer(x)

        x = self.norm_f(x)
        logits = self.lm_head(x)

        return logits


class ResidualBlock(nn.Module):
    def __init__(self, args: ModelArgs):
        """Simple block wrapping Mamba block with normalization and residual connection."""
        super().__init__()
        self.args = args
        self.mixer = MambaBlock(args)
        self.norm = RMSNorm(args.d_model)

    def forward(self, x):
        output = self.mixer(self.norm(x)) + x

        return output


class MambaBlock(nn.Module):
    def __init__(self, args: ModelArgs):
        """A single Mamba block, as described in Figure 3 in Section 3.4 in the Mamba paper [1]."""
        super().__init__()
        self.args = args

        self.in_proj = nn.Linear(args.d_model, args.d_inner * 2, bias=args.bias)

        self.conv1d = nn.Conv1d(
            in_channels=args.d_inner,
            out_channels=args.d_inner,
            bias=args.conv_bias,
            kernel_size=args.d_conv,
            groups=args.d_inner,
            padding=args.d_conv - 1,
        )

        # x_proj takes in `x` and outputs the input-specific delta, B, C
        self.x_proj = nn.Linear(args.d_inner, args.dt_rank + args.d_state * 2, bias=False)

        # dt_proj projects delta from dt_rank to d_in
        self.dt_proj = nn.Linear(args.dt_rank, args.d_inner, bias=True)

        # repeat(torch.arange(1, n + 1), 'n -> d n', d=d_inner)
        A = torch.arange(1, args.d_state + 1).unsqueeze(0).expand(args.d_inner, args.d_state)
        self.A_log = nn.Parameter(torch.log(A))
        self.D = nn.Parameter(torch.ones(args.d_inner))
        self.out_proj = nn.Linear(args.d_inner, args.d_model, bias=args.bias)

    def forward(self, x):
        (b, l, d) = x.shape

        x_and_res = self.in_proj(x)  # shape (b, l, 2 * d_in)
        x_and_res = x_and_res.permute(0, 2, 1)  # 'b l x -> b x l'
        (x, res) = x_and_res.split(split_size=[self.args.d_inner, self.args.d_inner], dim=1)

        x = self.conv1d(x)[:, :, :l]
        x = F.silu(x)

        y = self.ssm(x)

        y = y * F.silu(res)

        output = self.out_proj(y.permute(0, 2, 1))  # 'b d_model l -> b l d_model'

        return output

    def ssm(self, x):
        (d_in, n) = self.A_log.shape

        A = -torch.exp(self.A_log.float())  # shape (d_in, n)
        D = self.D.float()

        x_dbl = x.permute(0, 2, 1)  # 'b d l -> b l d'
        x_dbl = self.x_proj(x_dbl)  # (b, l, dt_rank + 2*n)

        (delta, B, C) = x_dbl.split(split_size=[self.args.dt_rank, n, n], dim=-1)
        delta = F.softplus(self.dt_proj(delta))  # (b, l, d_in)

        y = self.selective_scan(x, delta, A, B, C, D)

        return y

    def selective_scan(self, u, delta, A, B, C, D):
        (b, d_in, l) = u.shape
        n = A.shape[1]

        # Discretize continuous parameters (delta, A, B) using zero-order hold (ZOH) discretization
        deltaA = torch.exp(torch.einsum('bld,dn->bdln', delta, A))
        deltaB_u = torch.einsum('bld,bln,bdl->bdln', delta, B, u)

        # Perform selective scan (see scan_SSM() in The Annotated S4 [2])
        x = torch.zeros((b, d_in, n))
        ys = []
        for i in range(l):
            x = deltaA[:, :, i] * x + deltaB_u[:, :, i]
            y = torch.einsum('bdn,bn->bd', x, C[:, i, :])
            ys.append(y)
        y = torch.stack(ys, dim=2)  # (b d_in l)

        if D is not None:
            y = y + u * D.unsqueeze(-1)  # rearrange(D, 'd_in -> d_in 1')

        return y


class RMSNorm(nn.Module):
    def __init__(self,
                 d_model: int,
                 eps: float = 1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d_model))

    def forward(self, x):
        output = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight

        return output


def load_model():
    args = ModelArgs(d_model=8, n_layer=2, vocab_size=20, d_state=4)
    model = Mamba(args)
    return torch.compile(model.eval())


def make():
    torch.manual_seed(0)
    args = ModelArgs(d_model=8, n_layer=2, vocab_size=20, d_state=4)
    ids = torch.randint(0, 20, (2, 6))
    return Mamba(args).eval(), [(ids,), (ids[:1, :3],)]
