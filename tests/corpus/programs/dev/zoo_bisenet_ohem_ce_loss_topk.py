"""BiSeNet OhemCELoss: `n_min = labels[labels != self.ignore_lb].numel() // 16`, `loss_hard = loss[loss > self.thresh]`, and `if loss_hard.numel() < n_min:` falls back to `loss.topk(n_min)`.

Source: CoinCheung/BiSeNet@0471e808c0e048343bd6b5612c5e0e817dbf0391:lib/ohem_ce_loss.py:28-42
Kept: OhemCELoss verbatim except `.cuda()` on the threshold tensor (CPU only).
Simplified: the training script's `criteria_pre(logits, lb)` call is the
compiled module itself; 3 classes on 8x8 label maps.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F


class OhemCELoss(nn.Module):

    def __init__(self, thresh, ignore_lb=255):
        super(OhemCELoss, self).__init__()
        self.thresh = -torch.log(torch.tensor(thresh, requires_grad=False, dtype=torch.float))
        self.ignore_lb = ignore_lb
        self.criteria = nn.CrossEntropyLoss(ignore_index=ignore_lb, reduction='none')

    def forward(self, logits, labels):
        n_min = labels[labels != self.ignore_lb].numel() // 16
        loss = self.criteria(logits, labels).view(-1)
        loss_hard = loss[loss > self.thresh]
        if loss_hard.numel() < n_min:
            loss_hard, _ = loss.topk(n_min)
        return torch.mean(loss_hard)


def set_model_dist():
    criteria_pre = OhemCELoss(0.7)
    return torch.compile(criteria_pre)


def make():
    torch.manual_seed(0)
    logits = torch.randn(2, 3, 8, 8)
    labels = torch.randint(0, 3, (2, 8, 8))
    labels[0, :2] = 255
    # confident logits: few pixels above the threshold -> topk fallback
    confident = F.one_hot(labels.clamp(max=2), 3).permute(0, 3, 1, 2).float() * 10.0
    return OhemCELoss(0.7), [(logits, labels), (confident, labels)]
