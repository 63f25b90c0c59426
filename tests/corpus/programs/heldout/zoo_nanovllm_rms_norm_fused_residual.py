"""nano-vllm RMSNorm: two `@torch.compile`d methods (plain and fused add+norm) picked by `residual is None`.

Source: GeeeekExplorer/nano-vllm@76c0390163d79bebb96ed889d8a88f281e6c8149:nanovllm/layers/layernorm.py:1-37
Kept: the RMSNorm module, `rms_forward` and `add_rms_forward` each decorated
with `@torch.compile`, their in-place `mul_`/`add_` and dtype round trips, the
tuple return of the fused path, and the uncompiled `forward` dispatching on
`residual is None`.
Simplified: hidden size 8; the model around it is left out. nano-vllm runs
the model under `torch.inference_mode()`; here the weight is frozen with
`requires_grad_(False)` instead (same no-autograd setting for the in-place ops).
make() returns the module; its uncompiled `forward` calls the two
`@torch.compile`d helpers.
"""
import torch
from torch import nn


class RMSNorm(nn.Module):

    def __init__(self, hidden_size: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(hidden_size))

    @torch.compile
    def rms_forward(self, x: torch.Tensor) -> torch.Tensor:
        orig_dtype = x.dtype
        x = x.float()
        var = x.pow(2).mean(dim=-1, keepdim=True)
        x.mul_(torch.rsqrt(var + self.eps))
        x = x.to(orig_dtype).mul_(self.weight)
        return x

    @torch.compile
    def add_rms_forward(self, x: torch.Tensor, residual: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        orig_dtype = x.dtype
        x = x.float().add_(residual.float())
        residual = x.to(orig_dtype)
        var = x.pow(2).mean(dim=-1, keepdim=True)
        x.mul_(torch.rsqrt(var + self.eps))
        x = x.to(orig_dtype).mul_(self.weight)
        return x, residual

    def forward(self, x: torch.Tensor, residual: torch.Tensor | None = None) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
        if residual is None:
            return self.rms_forward(x)
        else:
            return self.add_rms_forward(x, residual)


def make():
    torch.manual_seed(0)
    norm = RMSNorm(8)
    with torch.no_grad():
        norm.weight.mul_(torch.linspace(0.5, 1.5, 8))
    norm.requires_grad_(False)
    x = torch.randn(5, 8)
    residual = torch.randn(5, 8)
    return norm, [(x,), (x, residual)]
