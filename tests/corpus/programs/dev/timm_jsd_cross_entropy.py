"""timm JsdCrossEntropy (AugMix): split sizes from the batch shape, a shape assert, KL over the split probs (no break).

Source: huggingface/pytorch-image-models@aa4b5850c1:timm/loss/jsd.py:9-39
Kept: __call__ with split_size / assert / torch.split, LabelSmoothingCrossEntropy
on the clean split (from timm/loss/cross_entropy.py:11-26), the clamped mixture
and the summed kl_div over a Python list.
Simplified: 3 splits of 2 samples, 4 classes.
"""
import torch
import torch.nn.functional as F
from torch import nn


class LabelSmoothingCrossEntropy(nn.Module):
    def __init__(self, smoothing=0.1):
        super().__init__()
        assert smoothing < 1.0
        self.smoothing = smoothing
        self.confidence = 1. - smoothing

    def forward(self, x, target):
        logprobs = F.log_softmax(x, dim=-1)
        nll_loss = -logprobs.gather(dim=-1, index=target.unsqueeze(1))
        nll_loss = nll_loss.squeeze(1)
        smooth_loss = -logprobs.mean(dim=-1)
        loss = self.confidence * nll_loss + self.smoothing * smooth_loss
        return loss.mean()


class JsdCrossEntropy(nn.Module):
    def __init__(self, num_splits=3, alpha=12, smoothing=0.1):
        super().__init__()
        self.num_splits = num_splits
        self.alpha = alpha
        if smoothing is not None and smoothing > 0:
            self.cross_entropy_loss = LabelSmoothingCrossEntropy(smoothing)
        else:
            self.cross_entropy_loss = torch.nn.CrossEntropyLoss()

    def __call__(self, output, target):
        split_size = output.shape[0] // self.num_splits
        assert split_size * self.num_splits == output.shape[0]
        logits_split = torch.split(output, split_size)
        loss = self.cross_entropy_loss(logits_split[0], target[:split_size])
        probs = [F.softmax(logits, dim=1) for logits in logits_split]
        logp_mixture = torch.clamp(torch.stack(probs).mean(axis=0), 1e-7, 1).log()
        loss += self.alpha * sum([F.kl_div(logp_mixture, p_split, reduction='batchmean') for p_split in probs]) / len(probs)
        return loss


train_loss_fn = JsdCrossEntropy(num_splits=3, smoothing=0.1)
loss_fn = torch.compile(train_loss_fn)


def make():
    torch.manual_seed(0)
    return JsdCrossEntropy(num_splits=3, smoothing=0.1), [(torch.randn(6, 4), torch.tensor([0, 3, 1, 2, 2, 1]))]
