"""GM201 bad: prints before each of several returns, some in the middle of tensor work."""
import torch


def route(x, mode="sum"):
    y = x * 2
    if mode == "sum":
        _gm_ret = y.sum(dim=0)
        print("routing", mode)
        print("sum over", y.shape[0], "rows")
        return _gm_ret
    if mode == "max":
        _gm_ret = y.amax(dim=0)
        print("routing", mode)
        return _gm_ret
    _gm_ret = y.mean(dim=0)
    print("routing", mode)
    print("mean fallback")
    return _gm_ret


def make():
    """Return (eager_callable, input_sets): one input per return."""
    torch.manual_seed(0)
    x = torch.randn(3, 4)
    return route, [(x, "sum"), (x, "max"), (x, "mean")]


compiled = torch.compile(route)

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
