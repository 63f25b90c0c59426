"""PyTorchVideo MaskedTemporalPooling("max"): `x[~mask, :] = -inf` and `x[invalid_first_dim, :] = 0` write through boolean masks before the temporal max; "avg" divides by `mask.sum().int()` lengths.

Source: facebookresearch/pytorchvideo@f3142bb05cdb56af0704ab6f0adfb0c7bbafe4a0:pytorchvideo/models/masked_multistream.py:35-93,322-344
Kept: MaskedTemporalPooling verbatim (all three methods), MaskedSequential's
isinstance dispatch.
Simplified: _MASK_MODULES lists only MaskedTemporalPooling; a Linear
projection stands in for the video backbone; feature 4.
"""
from typing import Optional

import torch
from torch import nn


class MaskedTemporalPooling(torch.nn.Module):
    """
    Applies temporal pooling operations on masked inputs. For each pooling operation
    all masked values are ignored.
    """

    def __init__(self, method: str):
        """
        method (str): the method of pooling to use. Options:
            'max': reduces temporal dimension to each valid max value.
            'avg': averages valid values in the temporal dimension.
            'sum': sums valid values in the temporal dimension.
            Note if all batch row elements are invalid, the temporal dimension is
            pooled to 0 values.
        """
        super().__init__()
        assert method in ("max", "avg", "sum")
        self._method = method

    def forward(
        self, x: torch.Tensor, mask: Optional[torch.Tensor] = None
    ) -> torch.Tensor:
        """
        Args:
            x (torch.Tensor): tensor with shape (batch_size, seq_len, feature_dim)
            mask (torch.Tensor): bool tensor with shape (batch_size, seq_len).
                Sequence elements that are False are invalid.

        Returns:
            Tensor with shape (batch_size, feature_dim)
        """
        assert x.dim() == 3, "Requires x shape (batch_size x seq_len x feature_dim)"
        b, t = x.shape[0], x.shape[1]
        if mask is None:
            mask = torch.ones((b, t), dtype=torch.bool)

        if self._method == "max":
            x[~mask, :] = float("-inf")

            # Invalid batch rows are set to 0.
            invalid_first_dim = ~mask.view(b, -1).any(dim=-1)
            x[invalid_first_dim, :] = 0

            x = torch.max(x, dim=1)[0]
        elif self._method == "avg":
            x = x * mask.unsqueeze(-1).float()
            mask = mask.view(b, t, -1).any(dim=-1)
            valid_lengths = mask.float().sum(dim=-1).int()
            x = x.sum(dim=1)
            x = x.div(valid_lengths.clamp(min=1).unsqueeze(-1).expand(x.size()).float())
        elif self._method == "sum":  # sum
            x = x * mask.unsqueeze(-1).float()
            x = x.sum(dim=1)
        else:
            raise NotImplementedError(
                f"{self._method} not available options are: 'max', 'avg', 'sum'"
            )

        return x




class MaskedSequential(nn.Sequential):
    """
    A sequential container that overrides forward to take a mask as well as the usual
    input tensor. This mask is only applied to modules in _MASK_MODULES (which take
    the mask argument).
    """
    _MASK_MODULES = [
        MaskedTemporalPooling,
    ]
    def forward(self, input: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        for module in self:
            if any(isinstance(module, mask_type) for mask_type in self._MASK_MODULES):
                input = module(input, mask=mask)
            else:
                input = module(input)
        return input


class PooledHead(nn.Module):
    def __init__(self, method):
        super().__init__()
        self.seq = MaskedSequential(nn.Linear(4, 4), MaskedTemporalPooling(method))

    def forward(self, x, mask=None):
        return self.seq(x, mask)


pool = torch.compile(PooledHead("max"))


def make():
    torch.manual_seed(0)
    x = torch.randn(2, 5, 4)
    mask = torch.tensor([[True, True, True, False, False], [False] * 5])
    return PooledHead("max"), [(x, mask), (x, torch.ones(2, 5, dtype=torch.bool))]
