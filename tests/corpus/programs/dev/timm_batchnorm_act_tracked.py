"""timm BatchNormAct2d: a copy of BatchNorm2d.forward with num_batches_tracked.add_(1) and the momentum switch (no break).

Source: huggingface/pytorch-image-models@aa4b5850c1:timm/layers/norm_act.py:101-149
Kept: the ndim _assert, exponential_average_factor, the training /
track_running_stats / num_batches_tracked block, bn_training, F.batch_norm with
the conditional buffers, drop and act.
Simplified: act is ReLU, drop is Identity; 4 channels.
"""
import torch
import torch.nn.functional as F
from torch import nn

_assert = torch._assert


class BatchNormAct2d(nn.BatchNorm2d):
    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True):
        super().__init__(num_features, eps=eps, momentum=momentum, affine=affine, track_running_stats=track_running_stats)
        self.drop = nn.Identity()
        self.act = nn.ReLU()

    def forward(self, x):
        _assert(x.ndim == 4, f'expected 4D input (got {x.ndim}D input)')
        if self.momentum is None:
            exponential_average_factor = 0.0
        else:
            exponential_average_factor = self.momentum
        if self.training and self.track_running_stats:
            if self.num_batches_tracked is not None:
                self.num_batches_tracked.add_(1)
                if self.momentum is None:
                    exponential_average_factor = 1.0 / float(self.num_batches_tracked)
                else:
                    exponential_average_factor = self.momentum
        if self.training:
            bn_training = True
        else:
            bn_training = (self.running_mean is None) and (self.running_var is None)
        x = F.batch_norm(
            x,
            self.running_mean if not self.training or self.track_running_stats else None,
            self.running_var if not self.training or self.track_running_stats else None,
            self.weight, self.bias, bn_training, exponential_average_factor, self.eps,
        )
        x = self.drop(x)
        x = self.act(x)
        return x


def create_model():
    return nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), BatchNormAct2d(4))


model = torch.compile(create_model().train())


def make():
    torch.manual_seed(0)
    return create_model().train(), [(torch.randn(2, 3, 5, 5),)]
