"""GM201 bad: a `print` in a loop: Dynamo gives up on the whole frame ("graph break in loop")."""
import torch
from torch import nn


class Stack(nn.Module):
    def __init__(self, dim=8, depth=3):
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(dim, dim) for _ in range(depth))

    def forward(self, x):
        h = x
        for i, layer in enumerate(self.layers):
            h = torch.relu(layer(h))
            torch._higher_order_ops.print("layer {}: norm {:.4f}", i, h.norm())
        return h.mean(dim=0)


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    return Stack(), [(torch.randn(4, 8),)]


compiled = torch.compile(Stack())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args).sum())
