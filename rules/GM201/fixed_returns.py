"""GM201 bad: prints before each of several returns, some in the middle of tensor work."""
import torch


def route(x, mode="sum"):
    y = x * 2
    if not torch.compiler.is_compiling():
        print("routing", mode)
    if mode == "sum":
        torch._higher_order_ops.print("sum over {!s} rows", y.shape[0])
        return y.sum(dim=0)
    if mode == "max":
        return y.amax(dim=0)
    torch._higher_order_ops.print("mean fallback")
    return y.mean(dim=0)


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
