"""diffusers FeedForward with GEGLU and RMSNorm: npu/mps availability switches, a deprecated-scale check, weight-dtype casts (no break).

Source: huggingface/diffusers@58eb52c080:src/diffusers/models/activations.py:94-123; src/diffusers/models/normalization.py:510-567
Kept: GEGLU (the gelu helper's mps/torch-version switch, the `scale`
deprecation branch, the is_torch_npu_available switch, chunk and gate),
RMSNorm.forward (npu switch, float32 variance, rsqrt, the fp16/bf16 weight
cast, optional bias, input dtype restore), and a pre-norm feed-forward.
Simplified: is_torch_npu_available / is_torch_version read module constants
as diffusers.utils does; dim 8.
"""
import importlib.util

import torch
import torch.nn.functional as F
from torch import nn

_torch_npu_available = importlib.util.find_spec("torch_npu") is not None


def is_torch_npu_available():
    return _torch_npu_available


def is_torch_version(operation: str, version: str):
    return False


class GEGLU(nn.Module):
    def __init__(self, dim_in: int, dim_out: int, bias: bool = True):
        super().__init__()
        self.proj = nn.Linear(dim_in, dim_out * 2, bias=bias)

    def gelu(self, gate):
        if gate.device.type == "mps" and is_torch_version("<", "2.0.0"):
            return F.gelu(gate.to(dtype=torch.float32)).to(dtype=gate.dtype)
        return F.gelu(gate)

    def forward(self, hidden_states, *args, **kwargs):
        if len(args) > 0 or kwargs.get("scale", None) is not None:
            raise TypeError("The `scale` argument is deprecated.")
        hidden_states = self.proj(hidden_states)
        if is_torch_npu_available():
            raise NotImplementedError
        else:
            hidden_states, gate = hidden_states.chunk(2, dim=-1)
            return hidden_states * self.gelu(gate)


class RMSNorm(nn.Module):
    def __init__(self, dim, eps: float, elementwise_affine: bool = True, bias: bool = False):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim)) if elementwise_affine else None
        self.bias = nn.Parameter(torch.zeros(dim)) if elementwise_affine and bias else None

    def forward(self, hidden_states):
        if is_torch_npu_available():
            raise NotImplementedError
        else:
            input_dtype = hidden_states.dtype
            variance = hidden_states.to(torch.float32).pow(2).mean(-1, keepdim=True)
            hidden_states = hidden_states * torch.rsqrt(variance + self.eps)
            if self.weight is not None:
                if self.weight.dtype in [torch.float16, torch.bfloat16]:
                    hidden_states = hidden_states.to(self.weight.dtype)
                hidden_states = hidden_states * self.weight
                if self.bias is not None:
                    hidden_states = hidden_states + self.bias
            else:
                hidden_states = hidden_states.to(input_dtype)
        return hidden_states


class FeedForward(nn.Module):
    def __init__(self, dim=8, mult=2):
        super().__init__()
        self.norm = RMSNorm(dim, eps=1e-6, bias=True)
        self.net = nn.ModuleList([GEGLU(dim, dim * mult), nn.Dropout(0.0), nn.Linear(dim * mult, dim)])

    def forward(self, hidden_states):
        hidden_states = self.norm(hidden_states)
        for module in self.net:
            hidden_states = module(hidden_states)
        return hidden_states


ff = torch.compile(FeedForward())


def make():
    torch.manual_seed(0)
    return FeedForward(), [(torch.randn(2, 3, 8),)]
