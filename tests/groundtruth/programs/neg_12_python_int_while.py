"""Negative: `while i < n_iters` loops on Python ints (unrolled by Dynamo) -- no break."""
import torch


def power_iteration(w, v, n_iters):
    i = 0
    while i < n_iters:
        v = w @ v
        v = v / v.norm()
        i += 1
    return v * 1.0


def make():
    """Return (eager_callable, input_sets) where input_sets together take EVERY branch."""
    w = torch.eye(8) + 0.1
    v = torch.ones(8)
    return power_iteration, [(w, v, 3), (w, v, 0)]


compiled = torch.compile(power_iteration)

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
