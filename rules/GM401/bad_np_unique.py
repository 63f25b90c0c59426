"""GM401 bad: counting distinct ids with `np.unique` inside a compiled function (traced as `torch.unique`)."""
import numpy as np
import torch


def distinct_scale(x: torch.Tensor, ids: list) -> torch.Tensor:
    y = x * 2
    distinct = np.unique(np.array(ids))
    return y / len(distinct)


def make():
    """Return (eager_callable, input_sets)."""
    return distinct_scale, [(torch.ones(4), [3, 1, 3, 2])]


compiled = torch.compile(distinct_scale)

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
