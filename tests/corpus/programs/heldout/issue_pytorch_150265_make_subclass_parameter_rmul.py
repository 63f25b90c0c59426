"""A Linear holding an `nn.Parameter` subclass built with `Tensor._make_subclass`, scaled by an int.

Source: https://github.com/pytorch/pytorch/issues/150265
The reporter's repro: class `b(nn.Parameter)` whose `__new__` calls
`torch.Tensor._make_subclass(cls, data)`, stored as attribute `b` on a Linear
subclass `a`; a fullgraph, dynamic compiled `test()` returns `3 * A.b`.
Kept: both classes, the module-level instance, the inductor options dict, the decorator.
Simplified: Linear(128, 128) -> Linear(8, 8); the wrapped data 12x12 -> 4x4.
"""
from torch import nn
import torch
torch_compile_options = {
    "epilogue_fusion"   : True,
    "max_autotune"      : True,
    "shape_padding"     : True,
    "trace.enabled"     : True,
    "triton.cudagraphs" : False,
}
class a(nn.Linear):
  def __init__(self, b):
    super().__init__(8, 8)
    self.b = b
class b(nn.Parameter):
  def __new__(cls, data):
    self = torch.Tensor._make_subclass(cls, data)
    return self
A = a(b(torch.randn(4, 4)))
@torch.compile(fullgraph = True, dynamic = True, options = torch_compile_options)
def test():
  out = 3 * A.b
  return out


def make():
    torch.manual_seed(0)
    return test._torchdynamo_orig_callable, [()]
