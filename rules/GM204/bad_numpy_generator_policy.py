"""GM204 bad: an epsilon-greedy policy drawing from a NumPy generator it keeps (Pearl, PANNs' mixup).

`self.np_random = np.random.default_rng(seed)` is a NumPy `Generator`; Dynamo supports none of
its methods, so `self.np_random.random()` and `self.np_random.integers(n)` break the graph
(GB0156, "Unsupported method call"), each draw a host call.
"""
import numpy as np
import torch


class EpsilonGreedy:
    def __init__(self, n_actions: int, epsilon: float = 0.1, seed: int = 0) -> None:
        self.n_actions = n_actions
        self.epsilon = epsilon
        self.np_random = np.random.default_rng(seed)

    def act(self, q_values: torch.Tensor) -> torch.Tensor:
        greedy = q_values.argmax(-1)
        explore = self.np_random.random() < self.epsilon
        action = self.np_random.integers(self.n_actions)
        return torch.where(torch.tensor(explore), torch.tensor(action), greedy)


policy = EpsilonGreedy(4)
act = torch.compile(policy.act)


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    return EpsilonGreedy(4).act, [(torch.randn(4),)]


if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
