"""GM204 bad: timm-style Mixup draws its switch and mixing weight with NumPy inside the compiled step."""
import numpy as np
import torch


def mix(x, mix_prob: float = 0.9, alpha: float = 0.4):
    lam = 1.0
    if np.random.rand() < mix_prob:
        lam = float(np.random.beta(alpha, alpha))
    return x * lam + x.flip(0) * (1.0 - lam)


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    np.random.seed(0)
    return mix, [(torch.randn(4, 3),), (torch.randn(4, 3), 0.0)]


compiled = torch.compile(mix)

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args).sum())
