"""GM303 bad: `if torch.equal(k, v)` returning early (advice only: `equal` has no exact tensor twin)."""
import torch


def share_kv(k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    k2 = k * 2
    v2 = v * 2
    if torch.equal(k2, v2):
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
