"""GM103 positive: a conditional expression whose test is `mask.any() and x.sum() > 0` (two tensor operands, one line)."""
import torch


def masked_or_plain(x, mask):
    y = x * 2
    out = y.masked_fill(mask, 0.0) if mask.any() and y.sum() > 0 else y  # expect: GM103
    return out + 1


def make():
    """Return (eager_callable, input_sets) where input_sets together take EVERY branch."""
    x = torch.ones(4, 8)
    some = torch.zeros(4, 8, dtype=torch.bool)
    some[0, 0] = True
    none = torch.zeros(4, 8, dtype=torch.bool)
    # (some, x): both true; (some, -x): second operand false; (none, x): short-circuit
    return masked_or_plain, [(x, some), (-x, some), (x, none)]


compiled = torch.compile(masked_or_plain)

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
