"""timm DenseNet DenseLayer: list-or-tensor input, `any_requires_grad` loop over Python bools, concat bottleneck (no break).

Source: huggingface/pytorch-image-models@aa4b5850c1:timm/models/densenet.py:61-108
Kept: bottleneck_fn (cat, norm1/conv1), any_requires_grad's loop on
tensor.requires_grad, forward (isinstance switch, the grad_checkpointing
guard, the scripting exception, norm2/conv2, training-gated dropout) and a
DenseBlock concatenating features.
Simplified: grad_checkpointing off; growth 4, 2 layers.
"""
from typing import List

import torch
import torch.nn.functional as F
from torch import nn


class DenseLayer(nn.Module):
    def __init__(self, num_input_features, growth_rate=4, drop_rate=0.1, grad_checkpointing=False):
        super().__init__()
        self.norm1 = nn.BatchNorm2d(num_input_features)
        self.conv1 = nn.Conv2d(num_input_features, growth_rate, 1, bias=False)
        self.norm2 = nn.BatchNorm2d(growth_rate)
        self.conv2 = nn.Conv2d(growth_rate, growth_rate, 3, padding=1, bias=False)
        self.drop_rate = float(drop_rate)
        self.grad_checkpointing = grad_checkpointing

    def bottleneck_fn(self, xs: List[torch.Tensor]) -> torch.Tensor:
        concated_features = torch.cat(xs, 1)
        return self.conv1(self.norm1(concated_features))

    def any_requires_grad(self, x: List[torch.Tensor]) -> bool:
        for tensor in x:
            if tensor.requires_grad:
                return True
        return False

    def forward(self, x):
        if isinstance(x, torch.Tensor):
            prev_features = [x]
        else:
            prev_features = x
        if self.grad_checkpointing and self.any_requires_grad(prev_features):
            if torch.jit.is_scripting():
                raise Exception("Memory Efficient not supported in JIT")
            raise NotImplementedError
        else:
            bottleneck_output = self.bottleneck_fn(prev_features)
        new_features = self.conv2(self.norm2(bottleneck_output))
        if self.drop_rate > 0:
            new_features = F.dropout(new_features, p=self.drop_rate, training=self.training)
        return new_features


class DenseBlock(nn.ModuleDict):
    def __init__(self, num_layers=2, num_input_features=4, growth_rate=4):
        super().__init__()
        for i in range(num_layers):
            self.add_module('denselayer%d' % (i + 1), DenseLayer(num_input_features + i * growth_rate, growth_rate))

    def forward(self, init_features):
        features = [init_features]
        for name, layer in self.items():
            new_features = layer(features)
            features.append(new_features)
        return torch.cat(features, 1)


block = torch.compile(DenseBlock().eval())


def make():
    torch.manual_seed(0)
    return DenseBlock().eval(), [(torch.randn(2, 4, 4, 4),)]
