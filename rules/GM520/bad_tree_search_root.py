"""GM520 bad: a tree search that builds its root node inside the compiled function and
expands it with a method that reads the network's value with `.item()` (the shape of
MuZero's `MCTS.run`).

`.item()` breaks the graph inside `Node.expand` (GB0124). The root was built in the traced
frame, so Dynamo cannot rebuild `root.expand` after that break and logs a second break at
the call ("Reconstruction failure", GB0092).
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


class Search(nn.Module):
    def __init__(self, dim: int = 4, actions: int = 3) -> None:
        super().__init__()
        self.policy = nn.Linear(dim, actions)
        self.value = nn.Linear(dim, 1)

    def forward(self, state: torch.Tensor) -> torch.Tensor:
        root = Node(1.0)
        root.expand(self.policy(state).softmax(-1), self.value(state).sum())
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
