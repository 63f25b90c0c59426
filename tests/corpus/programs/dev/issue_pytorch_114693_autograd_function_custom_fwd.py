"""A matmul autograd.Function whose forward/backward carry `torch.cuda.amp.custom_fwd/custom_bwd`.

Source: https://github.com/pytorch/pytorch/issues/114693
The reporter's MyMM: staticmethods decorated with `@torch.cuda.amp.custom_fwd` /
`@torch.cuda.amp.custom_bwd`, saving both inputs; `my_mm_c = torch.compile(my_mm)`;
speculate_subgraph could not trace the decorator's wrapper at the time.
Kept: MyMM and my_mm as posted, the compile form.
Simplified: 64x64 on cuda -> 4x4 on cpu; no autocast region, no backward call.
"""
import torch
class MyMM(torch.autograd.Function):
    @staticmethod
    @torch.cuda.amp.custom_fwd
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return a.mm(b)
    @staticmethod
    @torch.cuda.amp.custom_bwd
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        return grad.mm(b.t()), a.t().mm(grad)
def my_mm(a, b):
    return MyMM.apply(a, b)


my_mm_c = torch.compile(my_mm)


def make():
    torch.manual_seed(0)
    a = torch.randn([4, 4], dtype=torch.float32, requires_grad=True)
    return my_mm, [(a, a)]
