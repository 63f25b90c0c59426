"""GM101 positive: `if not (x > 0).any() or x.mean() < -1:` -- both operands are tensor values (two breaks, one line)."""
import torch


def revive(x):
    y = x * 1.0
    if not (y > 0).any() or y.mean() < -1:  # expect: GM101
        y = y - y.min() + 0.1
    return y.log()


def make():
    """Return (eager_callable, input_sets) where input_sets together take EVERY branch."""
    all_neg = -torch.ones(4, 8)
    mixed_low = torch.full((4, 8), -3.0)
    mixed_low[0, 0] = 1.0
    all_pos = torch.ones(4, 8)
    # all_neg: first operand true; mixed_low: second operand true; all_pos: both false
    return revive, [(all_neg,), (mixed_low,), (all_pos,)]


compiled = torch.compile(revive)

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
