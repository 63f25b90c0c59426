"""GM203 bad: a file written inside the compiled function (display-only: move the I/O out)."""
import os

import torch


def checkpointed(x):
    y = x.sin()
    with open(os.devnull, "w") as sink:
        sink.write(str(y.shape))
    return y * 2


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    return checkpointed, [(torch.randn(4),)]


compiled = torch.compile(checkpointed)

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args).sum())
