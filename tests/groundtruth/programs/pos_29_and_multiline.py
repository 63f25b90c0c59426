"""GM101 positive: a three-operand multi-line `and`; the two tensor operands break on their own lines, the shape operand does not."""
import torch


def straddles_zero(x):
    y = x - 0.5
    if (y.max() > 0  # expect: GM101
            and y.min() < 0  # expect: GM101
            and y.shape[0] > 1):
        y = y / (y.max() - y.min())
    return y * 2


def make():
    """Return (eager_callable, input_sets) where input_sets together take EVERY branch."""
    ramp = torch.linspace(0.0, 1.0, 32).reshape(4, 8)
    high = torch.full((4, 8), 2.0)
    low = torch.zeros(4, 8)
    # ramp: all operands true; high: second false; low: first false
    return straddles_zero, [(ramp,), (high,), (low,)]


compiled = torch.compile(straddles_zero)

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
