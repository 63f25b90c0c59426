"""Kats global model PinballLoss: NaN targets are masked in place and rows with no observations get `num_not_nan[num_not_nan == 0] += 1`.

Source: facebookresearch/Kats@0f96fb8b4c1ea7e668f46a37eeef4bb95c88ed21:kats/models/globalmodel/utils.py:593-681
Kept: the _Loss subclass with its constructor validation (logging.error +
ValueError), the weight buffer default, _check's size checks, forward's
NaN clean-up, the repeat/flatten quantile weights, the row-wise view/sum and
the reduction switch.
Simplified: nothing else; 3 quantiles, horizon 4.
"""
import logging
from typing import Optional

import torch
from torch import Tensor
from torch.nn.modules.loss import _Loss


class PinballLoss(_Loss):
    def __init__(
        self, quantile: Tensor, weight: Optional[Tensor] = None, reduction: str = "mean"
    ) -> None:
        super(PinballLoss, self).__init__(
            size_average=None, reduce=None, reduction=reduction
        )
        if len(quantile) < 1:
            msg = "quantile should not be empty."
            logging.error(msg)
            raise ValueError(msg)
        if len(quantile.size()) != 1:
            msg = "quantile should be a 1-dimentional tensor."
            logging.error(msg)
            raise ValueError(msg)

        self.quantile = quantile
        self.quantile.requires_grad = False

        if weight is None:
            d = len(quantile)
            weight = torch.ones(d) / d
        else:
            if weight.size() != quantile.size():
                msg = "weight and quantile should have the same size."
                logging.error(msg)
                raise ValueError(msg)

        self.register_buffer("weight", weight)
        self.reduction = reduction

    def _check(self, input: Tensor, target: Tensor) -> None:
        """
        Check input tensor and target tensor size.
        """
        if target.size()[0] != input.size()[0]:
            msg = "Input batch size is not equal to target batch size."
            logging.error(msg)
            raise ValueError(msg)
        num_feature = target.size()[1] * len(self.quantile)
        if input.size()[1] != num_feature:
            msg = f"Input should contain {num_feature} features but receive {input.size()[1]}."
            logging.error(msg)
            raise ValueError(msg)

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        self._check(input, target)
        n = len(input)
        m = len(self.quantile)
        horizon = target.size()[1]
        nans = torch.isnan(target).detach()
        # clean up NaNs to avoid NaNs in gradient
        target[nans] = 1.0
        num_not_nan = (~nans).float().sum(dim=1)
        num_not_nan[num_not_nan == 0] += 1

        target = target.repeat(1, m)
        nans = nans.repeat(1, m)

        quants = self.quantile.repeat(horizon, 1).t().flatten()
        weights = self.weight.repeat(horizon, 1).t().flatten()

        diff = target - input
        res = torch.max(diff * quants, diff * (quants - 1.0))
        res[nans] = 0.0
        res = res * weights
        res = (
            res.view(n, -1, horizon).sum(dim=2) / num_not_nan[:, None]
        )  # row_wise operation

        if self.reduction == "mean":
            return res.mean(dim=0)
        if self.reduction == "sum":
            return res.sum(dim=0)
        return res


def build_loss() -> PinballLoss:
    return PinballLoss(quantile=torch.tensor([0.5, 0.05, 0.95]), reduction="mean")


loss_fn = torch.compile(build_loss())


def make():
    torch.manual_seed(0)
    forecast = torch.randn(3, 12)
    target = torch.randn(3, 4)
    target_nan = target.clone()
    target_nan[0, 1] = float("nan")
    target_nan[2, :] = float("nan")
    return build_loss(), [
        (forecast, target),
        (forecast, target_nan),
        (forecast[:, :8], target),
    ]


RAISING_INPUTS = {2: "ValueError"}
