"""GM201 bad: a debug `print` between two tensor ops splits the graph in two."""
import torch


def step(x):
    y = torch.tanh(x) * 2
    torch._higher_order_ops.print("y {}", str(y.shape))
    return y.relu() + 1


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    return step, [(torch.randn(4, 8),)]


compiled = torch.compile(step)

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args).sum())
