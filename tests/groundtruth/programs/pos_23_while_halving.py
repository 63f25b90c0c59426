"""GM102 positive: iterative rescaling `while x.abs().max() > 1.0` loops on a tensor-valued test."""
import torch
from torch import nn


class Rescaler(nn.Module):
    def forward(self, x):
        x = x * 1.0
        while x.abs().max() > 1.0:  # expect: GM102
            x = x / 2
        return x + 1


def make():
    """Return (eager_callable, input_sets) where input_sets together take EVERY branch."""
    return Rescaler(), [(torch.full((4, 8), 5.0),), (torch.full((4, 8), 0.25),)]


model = Rescaler()
compiled_model = torch.compile(model)

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
