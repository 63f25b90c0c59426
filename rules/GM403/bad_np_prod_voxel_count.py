"""GM403 bad: a top-k loss keeps `int(np.prod(shape) * k / 100)` voxels (GB0033), and a
comprehension runs `range(np.sum(shape))` times (GB0059).

Source: MIC-DKFZ/nnUNet@0e495086:nnunetv2/training/loss/robust_ce_loss.py:6-32 (`TopKLoss.forward`; the
`range` comprehension is ours, to show GB0059)
Dynamo traces `np.prod` over a shape as a 0-d tensor whose value fake tensors do not know,
so every place Python takes it breaks, also after arithmetic with Python numbers and through
a comprehension (measured, torch 2.13). `math.prod(shape)` is the same int, which Dynamo folds.
"""
import numpy as np
import torch
from torch import nn


class TopKLoss(nn.Module):
    def __init__(self, k: float = 10.0):
        super().__init__()
        self.k = k

    def forward(self, net_output: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        res = nn.functional.cross_entropy(net_output, target, reduction="none")
        num_voxels = np.prod(res.shape, dtype=np.int64)
        res, _ = torch.topk(res.view((-1,)), int(num_voxels * self.k / 100), sorted=False)
        rows = np.sum(target.shape[1:])
        return res.mean() + sum(res[0] for _ in range(rows)) * 0.0


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    return TopKLoss(), [(torch.randn(2, 3, 4, 5), torch.randint(0, 3, (2, 4, 5)))]


compiled = torch.compile(TopKLoss())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
