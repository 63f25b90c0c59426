"""GM503 bad: a learnable offset created as a leaf inside the compiled function, and an input switched to require grad."""
import torch


def perturb(x: torch.Tensor) -> torch.Tensor:
    offset = torch.zeros(x.shape[-1], requires_grad=True)
    x.requires_grad_()
    return x + offset


def make():
    """Return (eager_callable, input_sets)."""
    return perturb, [(torch.randn(2, 4),)]


compiled = torch.compile(perturb)

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
