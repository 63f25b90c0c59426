"""GM101 bad: `if`/`else` on a tensor value where both branches return."""
import torch


@torch.compile
def residual_or_reset(x, h):
    delta = h - x
    if delta.abs().mean() < 0.5:  # expect: GM101
        return x + delta
    else:
        return torch.zeros_like(x)


def make():
    """Return (eager_callable, input_sets) where input_sets together take EVERY branch."""
    x = torch.ones(4, 8)
    return residual_or_reset._torchdynamo_orig_callable, [(x, x * 1.1), (x, x * 3)]


if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
