"""GM302 bad: a NumPy copy of a tensor is fine until Python branches on it.

`h.detach().cpu().numpy()` is traced (Dynamo treats the array as a tensor);
the `if` on its mean is where the graph breaks (display-only: no source fix).
"""
import torch
from torch import nn


class NumpyGate(nn.Module):
    def __init__(self, dim: int = 4) -> None:
        super().__init__()
        self.fc = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.fc(x)
        scores = h.detach().cpu().numpy()
        if scores.mean() > 0:
            h = h * 2
        return h + float(scores.sum())


def make():
    """Return (eager_callable, input_sets) taking both branches."""
    torch.manual_seed(0)
    model = identity_weights(NumpyGate())
    return model, [(torch.ones(2, 4),), (-torch.ones(2, 4),)]


def identity_weights(model: NumpyGate) -> NumpyGate:
    """Identity weights so that the sign of the input picks the branch."""
    with torch.no_grad():
        model.fc.weight.copy_(torch.eye(4))
        model.fc.bias.zero_()
    return model


compiled = torch.compile(NumpyGate())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
