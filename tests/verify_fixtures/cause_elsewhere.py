"""A break whose cause is on another line: ``np.lcm`` returns a traced numpy integer in a helper,
and Dynamo breaks on the ``if`` that tests it (as in reformer's ``_get_least_common_mult_chunk_len``).
``np.sqrt`` is a second fixable finding that runs but breaks nothing (``abs()`` of it traces).
"""

import numpy as np
import torch


def chunk_length(a, b):
    return np.lcm(a, b)  # CAUSE


def step(x):
    n = chunk_length(4, 6)
    scale = abs(np.sqrt(4.0))  # HARMLESS
    if x.shape[-1] % n != 0:  # BREAK
        x = x * 2
    return x * scale + 1


def factory():
    return step, [(torch.ones(5),), (torch.ones(12),)]
