"""GM201 bad: a tensor is printed, then updated in place: the deferred print needs a snapshot."""
import torch


def normalize_(x):
    y = x.clone()
    torch._higher_order_ops.print("before {!s}", y)
    y.sub_(y.mean())
    y.div_(y.std() + 1e-6)
    return y


def make():
    """Return (eager_callable, input_sets)."""
    return normalize_, [(torch.arange(4.0),)]


compiled = torch.compile(normalize_)

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
