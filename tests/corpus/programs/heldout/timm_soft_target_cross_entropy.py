"""timm SoftTargetCrossEntropy on mixup soft targets: sum(-target * log_softmax) then mean (no break expected).

Source: huggingface/pytorch-image-models@308d0b9554cea42dad38ce542d2478dc9abfd9fb:timm/loss/cross_entropy.py:29-36
Kept: the module and its forward exactly; the train.py pattern where
mixup produces soft targets and `train_loss_fn = SoftTargetCrossEntropy()`
is applied to the model output; the loss module itself is compiled with
an explicit backend argument.
Simplified: the mixed (soft) targets are given as input instead of coming
from timm's Mixup; 6 classes, batch 3.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F


class SoftTargetCrossEntropy(nn.Module):

    def __init__(self):
        super(SoftTargetCrossEntropy, self).__init__()

    def forward(self, x: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        loss = torch.sum(-target * F.log_softmax(x, dim=-1), dim=-1)
        return loss.mean()


train_loss_fn = torch.compile(SoftTargetCrossEntropy(), backend="inductor")


def make():
    torch.manual_seed(0)
    logits = torch.randn(3, 6, requires_grad=True)
    lam = 0.7
    hard = F.one_hot(torch.tensor([1, 4, 2]), 6).float()
    soft = hard * lam + hard.flip(0) * (1.0 - lam)
    return SoftTargetCrossEntropy(), [(logits, soft), (torch.randn(3, 6), hard)]
