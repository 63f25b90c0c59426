"""GM104 bad: a probability-range guard `if (p < 0).any() or (p > 1).any(): raise` -- two tensor operands, body only raises."""
import torch


def bernoulli_log_likelihood(p, target):
    if (p < 0).any() or (p > 1).any():  # expect: GM104
        raise ValueError("p must lie in [0, 1]")
    p = p.clamp(1e-6, 1 - 1e-6)
    return (target * p.log() + (1 - target) * (1 - p).log()).sum(-1)


#: The second input set takes the raising side (a probability above 1).
RAISING_INPUTS = {1: "ValueError"}


def make():
    """Return (eager_callable, input_sets) where input_sets together take EVERY branch."""
    p = torch.linspace(0.1, 0.9, 32).reshape(4, 8)
    return bernoulli_log_likelihood, [(p, (p > 0.5).float()), (p * 2, (p > 0.5).float())]


compiled = torch.compile(bernoulli_log_likelihood)

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
