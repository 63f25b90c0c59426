"""GM101 positive: an `if`/`elif`/`else` chain on a tensor statistic; the `if` and the `elif` each break."""
import torch


def temperature_scale(logits):
    s = logits.std()
    if s > 2.0:  # expect: GM101
        logits = logits / s
    elif s < 0.5:  # expect: GM101
        logits = logits * 2.0
    else:
        logits = logits + 0.0
    return logits.softmax(-1)


def make():
    """Return (eager_callable, input_sets) where input_sets together take EVERY branch."""
    base = torch.linspace(-1.0, 1.0, 8).repeat(4, 1)
    return temperature_scale, [(base * 10,), (base * 0.1,), (base,)]


compiled = torch.compile(temperature_scale)

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
