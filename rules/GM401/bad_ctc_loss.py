"""GM401 bad: a speech training step computes the CTC loss inside the compiled function (GB0036).

Source: sooftware/conformer@b4e7d449:README.md:45-75 (train step: `criterion = nn.CTCLoss()`, then
`criterion(outputs.transpose(0, 1), targets, output_lengths, target_lengths)`)
The CTC kernel sizes its output by the target lengths' data. With
`capture_dynamic_output_shape_ops` it still breaks (GB0037: no meta kernel), so the advice is
to compile the model and keep the loss outside (measured, torch 2.13).
"""
import torch
import torch.nn.functional as F
from torch import nn


class Encoder(nn.Module):
    def __init__(self, dim: int = 8, classes: int = 5) -> None:
        super().__init__()
        self.proj = nn.Linear(dim, classes)
        self.criterion = nn.CTCLoss(blank=0, zero_infinity=True)

    def forward(self, x, targets, input_lengths, target_lengths):
        log_probs = self.proj(x).log_softmax(-1).transpose(0, 1)
        loss = self.criterion(log_probs, targets, input_lengths, target_lengths)
        aux = F.ctc_loss(log_probs, targets, input_lengths, target_lengths, reduction="sum")
        return loss + 0.1 * aux


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    x = torch.randn(2, 6, 8)
    targets = torch.randint(1, 5, (2, 3))
    return Encoder(), [(x, targets, torch.full((2,), 6), torch.tensor([3, 2]))]


compiled = torch.compile(Encoder())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
