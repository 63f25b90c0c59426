"""GM203 bad: a sampling loop stepped through a tqdm progress bar (DDPM-style research code).

Dynamo skips building the bar (GB0007) and every step of its iterator (GB0008): the loop body is
never traced, and the whole sampler runs eagerly.
"""
import torch
from tqdm import tqdm


def sample(x, betas):
    for beta in tqdm(betas, desc="sampling", disable=True):
        x = x * (1 - beta).sqrt() - beta * x.tanh()
    return x


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    return sample, [(torch.randn(2, 4), torch.linspace(1e-4, 0.02, 5))]


compiled = torch.compile(sample)

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args).sum())
