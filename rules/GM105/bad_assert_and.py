"""GM105 bad: an I-BERT-style NaN check `assert a.isnan().sum() == 0 and b.isnan().sum() == 0, msg` -- the `and` branches on the first tensor operand."""
import torch


def running_range(x):
    x_min = x.min()
    x_max = x.max()
    assert x_max.isnan().sum() == 0 and x_min.isnan().sum() == 0, (  # expect: GM105
        "NaN detected when computing min/max of the activation"
    )
    return x_min, x_max


#: The second input set fails the first operand; the third fails neither.
RAISING_INPUTS = {1: "AssertionError"}


def make():
    """Return (eager_callable, input_sets) where input_sets together take EVERY branch."""
    return running_range, [(torch.randn(4, 8),), (torch.tensor([1.0, float("nan")]),), (torch.zeros(3),)]


compiled = torch.compile(running_range)

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
