"""GM515 bad: a gradient probe registered from outside on the head of a model whose compiled
`forward` calls it, with the legacy `register_backward_hook`.

Dynamo breaks at the call of the hooked head ("Tensor with grad_fn()", GB0104).
"""
import torch
from torch import nn

grad_norms: list[float] = []


def record_grad(module, grad_input, grad_output):
    grad_norms.append(float(grad_output[0].norm()))


class Classifier(nn.Module):
    def __init__(self, dim: int = 4, classes: int = 3) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Linear(dim, dim), nn.GELU())
        self.head = nn.Linear(dim, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        features = self.body(x)
        return self.head(features).log_softmax(-1)


classifier = Classifier()
classifier.head.register_backward_hook(record_grad)


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    fresh = Classifier()
    fresh.head.register_backward_hook(record_grad)
    return fresh, [(torch.randn(2, 4),)]


compiled = torch.compile(classifier)

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
