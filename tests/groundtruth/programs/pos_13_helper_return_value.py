"""GM101 positive: a helper returns a tensor score and the caller branches on it (`if score > 0.5`)."""
import torch
from torch import nn


class ConfidenceHead(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.cls = nn.Linear(dim, 1)
        self.refine = nn.Linear(dim, dim)

    def _confidence(self, x):
        return torch.sigmoid(self.cls(x)).mean()

    def forward(self, x):
        score = self._confidence(x)
        if score > 0.5:  # expect: GM101
            return x
        return self.refine(x)


def make():
    """Return (eager_callable, input_sets) where input_sets together take EVERY branch."""
    torch.manual_seed(0)
    model = ConfidenceHead()
    with torch.no_grad():
        model.cls.weight.fill_(1.0)
        model.cls.bias.zero_()
    return model, [(torch.ones(4, 8),), (-torch.ones(4, 8),)]


compiled = torch.compile(ConfidenceHead())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
