"""timm SplitBatchNorm2d (AdvProp auxiliary BN): in training the batch is split and each part goes through its own BN, with `super().forward` for the first split (no break).

Source: huggingface/pytorch-image-models@aa4b5850c1:timm/layers/split_batchnorm.py:18-52
Kept: the class verbatim (assert on num_splits, the shape assert with its
message, `super().forward`, the aux_bn ModuleList loop, the eval branch) inside
a conv stem as convert_splitbn_model would leave it.
Simplified: one conv + SplitBatchNorm2d + ReLU; 4 channels.
"""
import torch
import torch.nn as nn


class SplitBatchNorm2d(torch.nn.BatchNorm2d):

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True, num_splits=2):
        super().__init__(num_features, eps, momentum, affine, track_running_stats)
        assert num_splits > 1, 'Should have at least one aux BN layer (num_splits at least 2)'
        self.num_splits = num_splits
        self.aux_bn = nn.ModuleList([
            nn.BatchNorm2d(num_features, eps, momentum, affine, track_running_stats) for _ in range(num_splits - 1)])

    def forward(self, input: torch.Tensor):
        if self.training:  # aux BN only relevant while training
            split_size = input.shape[0] // self.num_splits
            assert input.shape[0] == split_size * self.num_splits, "batch size must be evenly divisible by num_splits"
            split_input = input.split(split_size)
            x = [super().forward(split_input[0])]
            for i, a in enumerate(self.aux_bn):
                x.append(a(split_input[i + 1]))
            return torch.cat(x, dim=0)
        else:
            return super().forward(input)


class Stem(nn.Module):
    def __init__(self, num_splits=2):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1, bias=False)
        self.bn = SplitBatchNorm2d(4, num_splits=num_splits)
        self.act = nn.ReLU(inplace=True)

    def forward(self, x):
        return self.act(self.bn(self.conv(x)))


def train_step(model, clean, adv):
    model.train()
    compiled = torch.compile(model)
    return compiled(torch.cat([clean, adv], dim=0))


def make():
    torch.manual_seed(0)
    return Stem(), [(torch.randn(4, 3, 6, 6),)]
