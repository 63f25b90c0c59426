"""GM507 bad: a function marked `allow_in_graph` whose body branches on a tensor's data.

Dynamo runs the marked function on fake tensors, which carry no data, so the
branch fails there and the graph breaks at the call (GB0033); the body then
runs as a frame of its own and breaks again at the branch (GB0170, GM101).
`describe` needs only shapes: its call traces (no break).
"""
import torch


@torch.compiler.allow_in_graph
def gate(x: torch.Tensor) -> torch.Tensor:
    if x.sum() > 0:
        return torch.sigmoid(x)
    return torch.relu(x)


@torch.compiler.allow_in_graph
def describe(x: torch.Tensor) -> torch.Tensor:
    return x * x.shape[0]


def block(x: torch.Tensor) -> torch.Tensor:
    y = describe(x * 2)
    return gate(y) + 1


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    return block, [(torch.randn(4),), (torch.randn(4) - 5.0,)]


compiled = torch.compile(block)

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
