"""timm SplitBatchNorm2d (AugMix aux BN): training splits the batch by shape and runs aux BNs (no break).

Source: huggingface/pytorch-image-models@aa4b5850c1:timm/layers/split_batchnorm.py:17-50
Kept: the BatchNorm2d subclass, num_splits assert, the aux_bn ModuleList, the
training branch with split_size/assert/split and super().forward, the eval
fallthrough.
Simplified: 4 channels, batch of 4.
"""
import torch
import torch.nn as nn


class SplitBatchNorm2d(torch.nn.BatchNorm2d):
    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True, num_splits=2):
        super().__init__(num_features, eps, momentum, affine, track_running_stats)
        assert num_splits > 1, 'Should have at least one aux BN layer (num_splits at least 2)'
        self.num_splits = num_splits
        self.aux_bn = nn.ModuleList([
            nn.BatchNorm2d(num_features, eps, momentum, affine, track_running_stats) for _ in range(num_splits - 1)
        ])

    def forward(self, input: torch.Tensor):
        if self.training:
            split_size = input.shape[0] // self.num_splits
            assert input.shape[0] == split_size * self.num_splits, "batch size must be evenly divisible by num_splits"
            split_input = input.split(split_size)
            x = [super().forward(split_input[0])]
            for i, a in enumerate(self.aux_bn):
                x.append(a(split_input[i + 1]))
            return torch.cat(x, dim=0)
        else:
            return super().forward(input)


net = nn.Sequential(nn.Conv2d(3, 4, 3), SplitBatchNorm2d(4), nn.ReLU())
net = torch.compile(net)


def make():
    torch.manual_seed(0)
    return nn.Sequential(nn.Conv2d(3, 4, 3), SplitBatchNorm2d(4), nn.ReLU()).train(), [(torch.randn(4, 3, 6, 6),)]
