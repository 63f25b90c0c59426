"""`random.seed(0)` then Python `random` draws inside a compiled function (the first compiled call is not seeded).

Source: https://github.com/pytorch/pytorch/issues/197101
Kept: the reporter's `seed_fn(x)` shape: `random.seed(0)` then the draws the report lists
(`random.random`, `randint`, `randrange`, `uniform`) added to or returned beside a tensor,
and a plain `torch.compile(seed_fn)`.
Simplified: the copy of the report read here cut the return line after `rand`, so the
draws of the four named functions are written out; the eager/compiled comparison loop is
dropped.
"""
import random

import torch


def seed_fn(x):
    random.seed(0)
    return x + random.random(), random.randint(0, 10), random.randrange(5), x * random.uniform(1.0, 2.0)


compiled = torch.compile(seed_fn)


def make():
    torch.manual_seed(0)
    return seed_fn, [(torch.zeros(3),)]
