"""timm LabelSmoothingCrossEntropy in a compiled train-step forward: log_softmax, gather of the target column, smoothing mix (no break expected).

Source: huggingface/pytorch-image-models@308d0b9554cea42dad38ce542d2478dc9abfd9fb:timm/loss/cross_entropy.py:11-26
Kept: the module with its `assert smoothing < 1.0` in __init__, the
confidence/smoothing attributes, log_softmax + gather(target.unsqueeze(1)) +
squeeze + mean over classes, the final `.mean()`; the way timm's train.py
uses it (`loss = loss_fn(output, target)` after the model forward).
Simplified: the model is a small linear classifier; 5 classes, batch 4.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F


class LabelSmoothingCrossEntropy(nn.Module):
    """ NLL loss with label smoothing.
    """
    def __init__(self, smoothing=0.1):
        super(LabelSmoothingCrossEntropy, self).__init__()
        assert smoothing < 1.0
        self.smoothing = smoothing
        self.confidence = 1. - smoothing

    def forward(self, x: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        logprobs = F.log_softmax(x, dim=-1)
        nll_loss = -logprobs.gather(dim=-1, index=target.unsqueeze(1))
        nll_loss = nll_loss.squeeze(1)
        smooth_loss = -logprobs.mean(dim=-1)
        loss = self.confidence * nll_loss + self.smoothing * smooth_loss
        return loss.mean()


class Classifier(nn.Module):
    def __init__(self, in_features=8, num_classes=5):
        super().__init__()
        self.fc1 = nn.Linear(in_features, 16)
        self.act = nn.GELU()
        self.head = nn.Linear(16, num_classes)

    def forward(self, x):
        return self.head(self.act(self.fc1(x)))


class TrainStep(nn.Module):
    def __init__(self, model, loss_fn):
        super().__init__()
        self.model = model
        self.loss_fn = loss_fn

    def forward(self, input, target):
        output = self.model(input)
        loss = self.loss_fn(output, target)
        return loss, output


def build(smoothing=0.1):
    return TrainStep(Classifier(), LabelSmoothingCrossEntropy(smoothing=smoothing))


train_step = torch.compile(build(0.1))


def make():
    torch.manual_seed(0)
    x = torch.randn(4, 8)
    target = torch.tensor([0, 3, 4, 1])
    return build(0.1), [(x, target)]
