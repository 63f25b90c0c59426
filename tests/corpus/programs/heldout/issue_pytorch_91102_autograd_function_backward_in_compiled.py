"""Custom autograd.Function applied, then `y.backward(dy)`, inside the compiled function.

Source: pytorch/pytorch#91102 (https://github.com/pytorch/pytorch/issues/91102)
Kept: the reporter's `Exp` autograd.Function (save_for_backward in forward,
saved_tensors in backward), `toy_example(x, dy)` applying it and calling
`y.backward(dy)` before returning, compiled with the inductor backend
(the report used `@torch._dynamo.optimize("inductor")`; today's spelling is
`@torch.compile(backend="inductor")`), and the training loop that makes a fresh
leaf `x` each step and reads `x.grad`.
Simplified: the module-level `config.cache_size_limit = 4` is left out (it is
process-wide Dynamo state), five steps -> the harness's calls.
"""
import torch


class Exp(torch.autograd.Function):
    @staticmethod
    def forward(ctx, i):
        result = i.exp()
        ctx.save_for_backward(result)
        return result

    @staticmethod
    def backward(ctx, grad_output):
        result, = ctx.saved_tensors
        return grad_output * result


@torch.compile(backend="inductor")
def toy_example(x, dy):
    y = Exp.apply(x)
    y.backward(dy)
    return y


def test():
    for i in range(5):
        x = torch.randn(10, requires_grad=True)
        dy = torch.randn(10)
        toy_example(x, dy)
        print(x.grad.norm())


def make():
    torch.manual_seed(0)
    x = torch.randn(10, requires_grad=True)
    dy = torch.randn(10)
    return toy_example._torchdynamo_orig_callable, [(x, dy)]
