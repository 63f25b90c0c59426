"""GM101 positive: `if y.mean() > self.threshold` compares a tensor value with a float attribute."""
import torch
from torch import nn


class ActivationGate(nn.Module):
    def __init__(self, dim=8, threshold=0.5):
        super().__init__()
        self.fc = nn.Linear(dim, dim)
        self.threshold = threshold

    def forward(self, x):
        y = torch.relu(self.fc(x))
        if y.mean() > self.threshold:  # expect: GM101
            y = y * self.threshold
        return y


def make():
    """Return (eager_callable, input_sets) where input_sets together take EVERY branch."""
    model = ActivationGate()
    with torch.no_grad():
        model.fc.weight.copy_(torch.eye(8))
        model.fc.bias.zero_()
    return model, [(torch.full((4, 8), 2.0),), (torch.full((4, 8), -1.0),)]


compiled = torch.compile(ActivationGate())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
