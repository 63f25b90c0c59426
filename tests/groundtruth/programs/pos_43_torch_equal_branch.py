"""Positive: `if torch.equal(k, v)` -- torch.equal returns a Python bool computed from tensor data, so Dynamo breaks at the call (GB0033 "Data dependent operator", 2 graphs)."""
import torch


def share_kv(k, v):
    k2 = k * 2
    v2 = v * 2
    if torch.equal(k2, v2):  # expect: GM105
        return k2 + 1
    return k2 + v2


def make():
    """Return (eager_callable, input_sets) where input_sets together take EVERY branch."""
    a = torch.ones(4, 8)
    return share_kv, [(a, a), (a, -a)]


compiled = torch.compile(share_kv)

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
