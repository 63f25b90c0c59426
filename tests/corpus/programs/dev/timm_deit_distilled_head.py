"""timm DeiT distilled head: returns (x, x_dist) only in distilled training, the average otherwise (no break).

Source: huggingface/pytorch-image-models@aa4b5850c1:timm/models/deit.py:113-124
Kept: forward_head (token split, pre_logits average, the two heads, the
`distilled_training and self.training and not torch.jit.is_scripting()`
tuple branch) and set_distilled_training.
Simplified: features come from a linear stem with two prefix tokens; dim 8, 3 classes.
"""
import torch
from torch import nn


class VisionTransformerDistilled(nn.Module):
    def __init__(self, dim=8, num_classes=3):
        super().__init__()
        self.stem = nn.Linear(6, dim)
        self.head = nn.Linear(dim, num_classes)
        self.head_dist = nn.Linear(dim, num_classes)
        self.distilled_training = False

    def set_distilled_training(self, enable=True):
        self.distilled_training = enable

    def forward_features(self, x):
        return self.stem(x)

    def forward_head(self, x, pre_logits: bool = False):
        x, x_dist = x[:, 0], x[:, 1]
        if pre_logits:
            return (x + x_dist) / 2
        x = self.head(x)
        x_dist = self.head_dist(x_dist)
        if self.distilled_training and self.training and not torch.jit.is_scripting():
            return x, x_dist
        else:
            return (x + x_dist) / 2

    def forward(self, x, pre_logits: bool = False):
        return self.forward_head(self.forward_features(x), pre_logits=pre_logits)


def create_model():
    model = VisionTransformerDistilled()
    model.set_distilled_training(True)
    return model.train()


model = torch.compile(create_model())


def make():
    torch.manual_seed(0)
    x = torch.randn(2, 5, 6)
    return create_model(), [(x,), (x, True)]
