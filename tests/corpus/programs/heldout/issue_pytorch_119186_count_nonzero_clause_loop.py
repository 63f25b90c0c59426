"""A compiled NumPy clause-propagation loop: `if np.count_nonzero(res) == 1:` inside nested loops over NumPy bool arrays, so the frame falls back to eager.

Source: https://github.com/pytorch/pytorch/issues/119186
Kept: the reporter's test2 (outer loop over clauses, inner loop over
columns, np.logical_xor, the count_nonzero test and the in-place `|=`) and
the companion test() that the issue compiles fine; inputs are NumPy bool
matrices as in the report.
Simplified: 4x4 matrices from a seeded generator instead of 10x10 from
np.random.choice; no logging setup.
"""
import numpy as np
import torch


def test(foo, bar):
    return np.count_nonzero(foo) + np.count_nonzero(bar)


def test2(foo, bar):
    for clause in foo:
        for i in range(0, bar.shape[1]):
            res = np.logical_xor(clause, bar[i])
            if np.count_nonzero(res) == 1:
                bar[i] |= res
    return bar


compiled = torch.compile(test2)


def make():
    rng = np.random.default_rng(0)
    foo = rng.choice([True] * 5 + [False] * 5, size=(4, 4))
    bar = rng.choice([True] + [False] * 10, size=(4, 4))
    return test2, [(foo, bar.copy()), (foo, np.zeros((4, 4), dtype=bool))]
