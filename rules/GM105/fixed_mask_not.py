"""GM105 bad: `not` on a boolean tensor used as a value forces a host sync."""
import torch


def invert_gate(x):
    y = x.relu()
    empty = ~(y.sum() > 0)
    return y + empty


def make():
    """Return (eager_callable, input_sets) where input_sets together take EVERY branch."""
    return invert_gate, [(torch.ones(4, 8),), (-torch.ones(4, 8),)]


compiled = torch.compile(invert_gate)

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
