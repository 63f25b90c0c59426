"""GM401 bad: data-dependent-size operators spelled as unbound `torch.Tensor` methods, `torch.ops.aten`
overloads, `torch.where(condition=...)` and a list-of-bools index.

Each is the same operator as `.unique()`, `.nonzero()` or a mask read, and Dynamo logs each (GB0036).
"""
import torch

torch._dynamo.config.capture_dynamic_output_shape_ops = True


def token_stats(ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
    h = scores * 2
    distinct = torch.Tensor.unique(ids)
    hits = torch.ops.aten.nonzero.default(h > 0)
    (rows,) = torch.where(condition=h > 1)
    kept = h[[True, False, True, False]]
    return distinct, hits, rows, kept * 2


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    return token_stats, [(torch.tensor([3, 1, 3, 2]), torch.randn(4))]


compiled = torch.compile(token_stats)

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
