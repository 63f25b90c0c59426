"""GM404 negative: indexing with 1-d integer tensors (a batch of arg-max tokens), and with Python ints.

Nothing here may be flagged, and Dynamo must not break.
"""
import torch
from torch import nn


class GreedyStep(nn.Module):
    def __init__(self, vocab: int = 10, dim: int = 4) -> None:
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        self.head = nn.Linear(dim, vocab)

    def forward(self, state: torch.Tensor) -> torch.Tensor:
        logits = self.head(state)
        next_tokens = logits.argmax(-1)
        return state + self.emb.weight[next_tokens] + self.emb.weight[0]


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    return GreedyStep(), [(torch.randn(3, 4),)]


compiled = torch.compile(GreedyStep())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
