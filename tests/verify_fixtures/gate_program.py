"""The break gate's program: one print, a real logged break (GB0059), and nothing else that breaks.

The gate tests copy it and edit the copy: add a second print (a new site),
insert lines above the print (a shift), delete the print (a shrink), or
change an input's shape (a recompilation).
"""

import torch


def step(x):
    y = x * 2
    print("y", y.shape)  # BREAK
    return y + 1


def factory():
    return {"callable": step, "inputs": [((torch.ones(4),), {}), ((torch.ones(4) * 3,), {})]}
