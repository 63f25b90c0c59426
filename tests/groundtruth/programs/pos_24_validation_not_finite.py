"""GM104 positive: `if not torch.isfinite(logits).all(): raise RuntimeError(...)` is a tensor-valued validation guard."""
import torch
from torch import nn


class Classifier(nn.Module):
    def __init__(self, dim=8, classes=4):
        super().__init__()
        self.head = nn.Linear(dim, classes)

    def forward(self, x):
        logits = self.head(x)
        if not torch.isfinite(logits).all():  # expect: GM104
            raise RuntimeError("non-finite logits")
        return logits.log_softmax(-1)


def make():
    """Return (eager_callable, input_sets) where input_sets together take EVERY branch.

    The raising branch is not exercised: calling it would raise RuntimeError.
    """
    torch.manual_seed(0)
    return Classifier(), [(torch.randn(4, 8),)]


compiled = torch.compile(Classifier())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
