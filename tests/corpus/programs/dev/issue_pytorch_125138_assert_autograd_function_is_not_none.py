"""Conv -> relu -> `assert MyExp is not None` -> loss: an assert on an autograd.Function class in forward.

Source: pytorch/pytorch#125138 (https://github.com/pytorch/pytorch/issues/125138)
Kept: MyExp (a custom autograd.Function that is defined but not called), MyModule's forward with
the assert between the relu and the loss, and `torch.compile(model, backend="inductor")`.
Simplified: 64 -> 4 channels, 32x32 -> 6x6 input.
"""
import torch


class MyExp(torch.autograd.Function):
    @staticmethod
    def forward(ctx, i):
        result = i.exp()
        ctx.save_for_backward(result)
        return result

    @staticmethod
    def backward(ctx, grad_output):
        result, = ctx.saved_tensors
        return grad_output * result


class MyModule(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(4, 4, 1, bias=False)

    def forward(self, x):
        y = self.conv(x)
        z = torch.relu(y)
        assert MyExp is not None, "failed to import MyExp"
        loss = z.pow(2.0).sum()
        return loss


model = MyModule()
compiled_model = torch.compile(model, backend="inductor")


def make():
    torch.manual_seed(0)
    return MyModule(), [(torch.randn([1, 4, 6, 6]),)]
