"""A `random.Random` seeded from `random.randint` inside a fullgraph compiled function.

Source: https://github.com/pytorch/pytorch/pull/133725
The PR ("[dynamo] support random.Random") notes the graph break that remains when a random
output is used as a seed: `fn` draws `seed = random.randint(0, 100)`, builds
`rand = random.Random(seed)` and returns `x + rand.randrange(10)`; compiled with
backend="eager", fullgraph=True.
Kept: `fn` and the compile call as posted.
Simplified: nothing (a second, 2x2 input is added).
"""
import random
import torch

def fn(x):
    seed = random.randint(0, 100)
    rand = random.Random(seed)
    return x + rand.randrange(10)

opt_fn = torch.compile(fn, backend="eager", fullgraph=True)


def make():
    torch.manual_seed(0)
    return fn, [(torch.ones(1),), (torch.ones(2, 2),)]
