"""torchvision stochastic_depth / StochasticDepth: argument checks and the training-only noise (no break).

Source: pytorch/vision@v0.29.2:torchvision/ops/stochastic_depth.py:8-66
Kept: the p/mode ValueErrors, `if not training or p == 0.0: return input`,
the row/batch noise shape, bernoulli_, `if survival_rate > 0.0: noise.div_`,
and the module wrapper used by EfficientNet's MBConv residual.
Simplified: MBConv reduced to one conv block.
"""
import torch
from torch import Tensor, nn


def stochastic_depth(input: Tensor, p: float, mode: str, training: bool = True) -> Tensor:
    if p < 0.0 or p > 1.0:
        raise ValueError(f"drop probability has to be between 0 and 1, but got {p}")
    if mode not in ["batch", "row"]:
        raise ValueError(f"mode has to be either 'batch' or 'row', but got {mode}")
    if not training or p == 0.0:
        return input

    survival_rate = 1.0 - p
    if mode == "row":
        size = [input.shape[0]] + [1] * (input.ndim - 1)
    else:
        size = [1] * input.ndim
    noise = torch.empty(size, dtype=input.dtype, device=input.device)
    noise = noise.bernoulli_(survival_rate)
    if survival_rate > 0.0:
        noise.div_(survival_rate)
    return input * noise


class StochasticDepth(nn.Module):
    def __init__(self, p: float, mode: str) -> None:
        super().__init__()
        self.p = p
        self.mode = mode

    def forward(self, input: Tensor) -> Tensor:
        return stochastic_depth(input, self.p, self.mode, self.training)


class MBConv(nn.Module):
    def __init__(self, channels=4, sd_prob=0.2):
        super().__init__()
        self.block = nn.Sequential(nn.Conv2d(channels, channels, 3, padding=1), nn.BatchNorm2d(channels), nn.SiLU())
        self.use_res_connect = True
        self.stochastic_depth = StochasticDepth(sd_prob, "row")

    def forward(self, input: Tensor) -> Tensor:
        result = self.block(input)
        if self.use_res_connect:
            result = self.stochastic_depth(result)
            result += input
        return result


def build(training):
    block = MBConv()
    block.train(training)
    return torch.compile(block)


def make():
    torch.manual_seed(0)
    x = torch.randn(2, 4, 5, 5)
    return MBConv().train(), [(x,)]
