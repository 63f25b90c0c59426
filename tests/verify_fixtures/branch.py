"""A data-dependent branch (GM101) and a print (GM201), both real graph breaks.

Two input sets, so both sides of the branch run.
"""

import torch


def step(x):
    y = x * 2
    if y.sum() > 0:  # BREAK GM101
        z = y + 1
    else:
        z = y - 1
    print("z", z.shape)  # BREAK GM201
    return z * 3


def factory():
    return {
        "callable": step,
        "inputs": [((torch.ones(8),), {}), ((-torch.ones(8),), {})],
    }
