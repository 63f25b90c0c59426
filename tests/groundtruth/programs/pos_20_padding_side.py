"""GM101 positive: detecting left padding from the attention mask's values (`if (mask[:, -1] == 0).any()`)."""
import torch
from torch import nn


class LastTokenPooler(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.dense = nn.Linear(dim, dim)

    def forward(self, hidden, attention_mask):
        right_padded = (attention_mask[:, -1] == 0).any()
        if right_padded:  # expect: GM101
            last = attention_mask.sum(dim=1) - 1
            pooled = hidden[torch.arange(hidden.shape[0]), last]
        else:
            pooled = hidden[:, -1]
        return torch.tanh(self.dense(pooled))


def make():
    """Return (eager_callable, input_sets) where input_sets together take EVERY branch."""
    torch.manual_seed(0)
    hidden = torch.randn(2, 4, 8)
    full = torch.ones(2, 4, dtype=torch.long)
    padded = torch.tensor([[1, 1, 1, 0], [1, 1, 0, 0]])
    return LastTokenPooler(), [(hidden, full), (hidden, padded)]


compiled = torch.compile(LastTokenPooler())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
