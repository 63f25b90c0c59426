"""GM202 bad: `logging.info` (the module function) once per step of an unrolled loop."""
import logging

import torch


def refine(x, steps=3):
    h = x
    for step in range(steps):
        h = h - 0.1 * torch.tanh(h)
        if not torch.compiler.is_compiling():
            logging.info("step %d residual %.5f", step, (h - x).abs().mean())
    return h * 2


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    return refine, [(torch.randn(6),)]


compiled = torch.compile(refine)

if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO)
    fn, inputs = make()
    for args in inputs:
        print(fn(*args).sum())
