"""GM507 bad: a helper kept out of compilation with `@torch.compiler.disable`, plus an explicit break.

The helper runs eagerly between two graphs; `torch._dynamo.graph_break()` asks for a break.
"""
import torch


@torch.compiler.disable
def grid_size(x: torch.Tensor) -> int:
    return int(x.abs().sum().item()) % 3 + 1


def scale(x: torch.Tensor) -> torch.Tensor:
    y = x * 2
    torch._dynamo.graph_break()
    return y + grid_size(y)


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    return scale, [(torch.randn(3),)]


compiled = torch.compile(scale)

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
