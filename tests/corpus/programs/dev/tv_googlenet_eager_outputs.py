"""torchvision GoogLeNet: _transform_input flag, is_scripting warning branch, eager_outputs namedtuple in training (no break).

Source: pytorch/vision@v0.29.2:torchvision/models/googlenet.py:102-108,166-181
Kept: _transform_input (the transform_input flag rescaling each channel),
forward with `aux_defined = self.training and self.aux_logits`, the
torch.jit.is_scripting branch with warnings.warn (not taken under eager or
compile), eager_outputs returning the GoogLeNetOutputs namedtuple or the logits.
Simplified: the trunk and aux heads are linear layers over pooled features.
"""
import warnings
from collections import namedtuple

import torch
from torch import Tensor, nn

GoogLeNetOutputs = namedtuple("GoogLeNetOutputs", ["logits", "aux_logits2", "aux_logits1"])
_GoogLeNetOutputs = GoogLeNetOutputs


class GoogLeNet(nn.Module):
    def __init__(self, num_classes=4, aux_logits=True, transform_input=True):
        super().__init__()
        self.aux_logits = aux_logits
        self.transform_input = transform_input
        self.trunk = nn.Linear(3, 6)
        self.fc = nn.Linear(6, num_classes)
        self.aux1 = nn.Linear(6, num_classes) if aux_logits else None
        self.aux2 = nn.Linear(6, num_classes) if aux_logits else None

    def _transform_input(self, x: Tensor) -> Tensor:
        if self.transform_input:
            x_ch0 = torch.unsqueeze(x[:, 0], 1) * (0.229 / 0.5) + (0.485 - 0.5) / 0.5
            x_ch1 = torch.unsqueeze(x[:, 1], 1) * (0.224 / 0.5) + (0.456 - 0.5) / 0.5
            x_ch2 = torch.unsqueeze(x[:, 2], 1) * (0.225 / 0.5) + (0.406 - 0.5) / 0.5
            x = torch.cat((x_ch0, x_ch1, x_ch2), 1)
        return x

    def _forward(self, x: Tensor):
        h = torch.relu(self.trunk(x.mean(dim=(2, 3))))
        aux1 = self.aux1(h) if self.aux1 is not None and self.training else None
        aux2 = self.aux2(h) if self.aux2 is not None and self.training else None
        return self.fc(h), aux2, aux1

    def eager_outputs(self, x: Tensor, aux2: Tensor, aux1):
        if self.training and self.aux_logits:
            return _GoogLeNetOutputs(x, aux2, aux1)
        else:
            return x

    def forward(self, x: Tensor):
        x = self._transform_input(x)
        x, aux2, aux1 = self._forward(x)
        aux_defined = self.training and self.aux_logits
        if torch.jit.is_scripting():
            if not aux_defined:
                warnings.warn("Scripted GoogleNet always returns GoogleNetOutputs Tuple")
            return GoogLeNetOutputs(x, aux2, aux1)
        else:
            return self.eager_outputs(x, aux2, aux1)


def train_loop():
    model = GoogLeNet().train()
    model = torch.compile(model)
    return model


def make():
    torch.manual_seed(0)
    return GoogLeNet().train(), [(torch.rand(2, 3, 4, 4),)]
