"""GM204 negative: NumPy draws Dynamo traces as torch ops (a seed, sized draws that stay arrays): no break."""
import numpy as np
import torch


def jitter(x):
    np.random.seed(0)
    noise = torch.from_numpy(np.random.normal(0.0, 0.01, size=4)).to(x.dtype)
    return x + noise


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    return jitter, [(torch.randn(4),)]


compiled = torch.compile(jitter)

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args).sum())
