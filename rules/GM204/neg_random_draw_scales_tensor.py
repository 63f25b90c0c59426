"""GM204 negative: `random.uniform` / `random.randint` draws that only scale tensors stay in the graph."""
import random

import torch


def jitter(x, img):
    lam = random.uniform(0.8, 1.2)
    h = x * lam
    return h + img * random.uniform(0.0, 0.1) + random.randint(1, 3) * x


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    random.seed(0)
    return jitter, [(torch.randn(4), torch.randn(4))]


compiled = torch.compile(jitter)

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args).sum())
