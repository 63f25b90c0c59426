"""GM202 bad: `logging.info` (the module function) once per step of an unrolled loop."""
import logging

import torch


def refine(x, steps=3):
    _gm_log_1 = []
    h = x
    for step in range(steps):
        h = h - 0.1 * torch.tanh(h)
        _gm_log_1.append((step, (h - x).abs().mean()))
    _gm_ret = h * 2
    list(map(lambda _gm_args: logging.info("step %d residual %.5f", _gm_args[0], _gm_args[1]), _gm_log_1))
    return _gm_ret


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
