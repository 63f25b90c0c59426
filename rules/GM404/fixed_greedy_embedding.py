"""GM404 bad: one greedy decoding step, embedding the arg-max token with `emb.weight[next_token]`."""
import torch
from torch import nn


class GreedyStep(nn.Module):
    def __init__(self, vocab: int = 10, dim: int = 4) -> None:
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        self.head = nn.Linear(dim, vocab)

    def forward(self, state: torch.Tensor) -> torch.Tensor:
        logits = self.head(state)
        next_token = logits.argmax()
        return state + self.emb.weight.index_select(0, next_token.reshape(1)).squeeze(0)


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    return GreedyStep(), [(torch.randn(4),), (torch.randn(4) * 3,)]


compiled = torch.compile(GreedyStep())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
