"""GM509 bad: a causal convolution reads its left padding from a functools.cached_property (Python < 3.12).

Source: huggingface/transformers@v5.23.0:src/transformers/models/voxtral_realtime/modeling_voxtral_realtime.py:199-231
(shortened: no padding cache)
"""
from functools import cached_property

import torch
from torch import nn


class CausalConv1d(nn.Conv1d):
    @property
    def left_pad(self):
        effective_kernel_size = (self.kernel_size[0] - 1) * self.dilation[0] + 1
        return effective_kernel_size - self.stride[0]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = nn.functional.pad(x, (self.left_pad, 0))
        return super().forward(x)


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    return CausalConv1d(2, 3, 3, dilation=2), [(torch.randn(1, 2, 8),)]


compiled = torch.compile(CausalConv1d(2, 3, 3, dilation=2))

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
