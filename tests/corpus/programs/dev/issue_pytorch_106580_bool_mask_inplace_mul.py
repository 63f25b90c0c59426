"""Boolean-mask in-place update `t[a] *= 0.2` under torch.compile.

Source: pytorch/pytorch#106580 (https://github.com/pytorch/pytorch/issues/106580)
The reporter's script compiles `reprod_function` with backend="eager", fullgraph=True, and gets
`dynamic Tensor.__getitem__(bool[])`; the suggested workaround is `torch.where(a, t * 0.2, t)`.
Kept: the function body and compile call exactly as reported (without fullgraph, so the run goes on).
Simplified: nothing; shapes are the reporter's (1, 2, 3).
"""
import torch


def reprod_function(t: torch.Tensor, a: torch.Tensor):
    t[a] *= 0.2
    return t


reprod_function_compile = torch.compile(reprod_function, backend="eager")


def make():
    torch.manual_seed(0)
    x = torch.rand(1, 2, 3)
    y = torch.rand(1, 2, 3).to(torch.bool)
    return reprod_function, [(x, y)]
