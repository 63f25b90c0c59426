"""GM201 bad: a `print` under an ordinary Python condition, as in a `verbose` flag."""
import torch
from torch import nn


class Scorer(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, x, verbose=False):
        h = self.proj(x)
        if verbose and h.dim() > 1:
            torch._higher_order_ops.print("scores {} {}", str(h.shape), str(h.dtype))
        return h.softmax(dim=-1)


def make():
    """Return (eager_callable, input_sets): verbose on and off take both branches."""
    torch.manual_seed(0)
    x = torch.randn(2, 8)
    return Scorer(), [(x, True), (x, False)]


compiled = torch.compile(Scorer())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args).sum())
