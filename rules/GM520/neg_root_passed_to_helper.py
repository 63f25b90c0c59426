"""GM520 negative: the same search, with the root handed to a helper that expands it.

`.item()` in `Node.expand` still breaks the graph (GM301 reports it), but the helper runs as
a frame of its own after that break, where the root is an argument with a source: Dynamo
logs no reconstruction failure.
"""
import torch
from torch import nn


class Node:
    def __init__(self, prior: float) -> None:
        self.prior = prior
        self.value = 0.0
        self.children: dict[int, "Node"] = {}

    def expand(self, policy: torch.Tensor, value: torch.Tensor) -> None:
        self.value = value.item()
        for action in range(policy.shape[-1]):
            self.children[action] = Node(policy[action])


def expand_root(root: Node, policy: torch.Tensor, value: torch.Tensor) -> Node:
    root.expand(policy, value)
    return root


class Search(nn.Module):
    def __init__(self, dim: int = 4, actions: int = 3) -> None:
        super().__init__()
        self.policy = nn.Linear(dim, actions)
        self.value = nn.Linear(dim, 1)

    def forward(self, state: torch.Tensor) -> torch.Tensor:
        root = expand_root(Node(1.0), self.policy(state).softmax(-1), self.value(state).sum())
        return torch.stack([child.prior for child in root.children.values()]) * root.value


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    return Search(), [(torch.randn(4),)]


search = torch.compile(Search())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
