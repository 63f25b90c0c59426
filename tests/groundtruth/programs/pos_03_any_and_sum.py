"""GM101 positive: `a_cond and b_cond` on one line; both operands are tensor values (two breaks, same line)."""
import torch


def gate(a, b):
    y = a * 2
    if (a > 0).any() and b.sum() > 1:  # expect: GM101
        y = y + b
    return y * 0.5


def make():
    """Return (eager_callable, input_sets) where input_sets together take EVERY branch."""
    pos = torch.ones(4, 8)
    neg = -torch.ones(4, 8)
    # (any true, sum > 1) -> body; (any true, sum < 1) -> second operand false; (any false) -> short-circuit
    return gate, [(pos, pos), (pos, neg), (neg, pos)]


compiled = torch.compile(gate)

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
