"""PyTorchVideo masked LSTM: `lengths = mask.sum(axis=1)` goes (clamped) into pack_padded_sequence(enforce_sorted=False) before nn.LSTM, reached through MaskedSequential's isinstance dispatch.

Source: facebookresearch/pytorchvideo@f3142bb05cdb56af0704ab6f0adfb0c7bbafe4a0:pytorchvideo/models/masked_multistream.py:208-272,322-344
Kept: LSTM wrapper (both directions, flatten_parameters, h[-1] / cat of
both directions) and MaskedSequential (the `_MASK_MODULES` isinstance
dispatch) verbatim.
Simplified: _MASK_MODULES lists only the masked modules defined here
(LSTM, LearnMaskedDefault); feature 6, hidden 4.
"""
from typing import Optional

import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence


class LearnMaskedDefault(nn.Module):
    """
    Learns default values to fill invalid entries within input tensors. The
    invalid entries are represented by a mask which is passed into forward alongside
    the input tensor. Note the default value is only used if all entries in the batch row are
    invalid rather than just a portion of invalid entries within each batch row.
    """

    def __init__(
        self, feature_dim: int, init_method: str = "gaussian", freeze: bool = False
    ):
        """
        Args:
            feature_dim (int): the size of the default value parameter, this must match the
                input tensor size.
            init_method (str): the initial default value parameter. Options:
                'guassian'
                'zeros'
            freeze (bool): If True, the learned default parameter weights are frozen.
        """
        super().__init__()
        if init_method == "zeros":
            self._learned_defaults = nn.Parameter(
                torch.zeros(feature_dim), requires_grad=(not freeze)
            )
        elif init_method == "gaussian":
            self._learned_defaults = nn.Parameter(
                torch.Tensor(feature_dim), requires_grad=(not freeze)
            )
            nn.init.normal_(self._learned_defaults)
        else:
            raise NotImplementedError(
                f"{init_method} not available. Options are: 'zeros' or 'gaussian'"
            )

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """
        Args:
            x (torch.Tensor): tensor of shape (batch_size, feature_dim).
            mask (torch.Tensor): bool tensor of shape (batch_size, seq_len) If all elements
                in the batch dimension are False the learned default parameter is used for
                that batch element.

        Returns:
            Tensor with shape (batch_size, feature_dim)
        """
        # Determine which rows have no valid entries and use these for the default value mask.
        mask = mask.view(mask.shape[0], -1).any(dim=-1)
        for i in range(1, x.dim()):
            mask = mask.unsqueeze(i)
        x = x * mask.float() + self._learned_defaults * (1 - mask.float())
        return x


class LSTM(nn.Module):
    """
    Wrapper for torch.nn.LSTM that handles masked inputs.
    """

    def __init__(
        self,
        dim_in: int,
        hidden_dim: int,
        dropout: float = 0.0,
        bidirectional: bool = False,
    ):
        """
        Args:
          dim_in (int): input feature dimension
          hidden_dim (int): hidden dimesion of lstm layer
          dropout (float): dropout rate - 0.0 if no dropout
          bidirectional (bool): bidirectional or forward only
        """
        super().__init__()
        self.lstm = nn.LSTM(
            dim_in,
            hidden_dim,
            batch_first=True,
            dropout=dropout,
            bidirectional=bidirectional,
        )
        self.lstm.flatten_parameters()
        self.output_dim = 2 * hidden_dim if bidirectional else hidden_dim
        self.bidirectional = bidirectional

    def forward(
        self, data: torch.Tensor, mask: Optional[torch.Tensor] = None
    ) -> torch.Tensor:
        """
        Args:
            data (torch.Tensor): tensor with shape (batch_size, seq_len, feature_dim)
            mask (torch.Tensor): bool tensor with shape (batch_size, seq_len).
                Sequence elements that are False are invalid.

        Returns:
            Tensor with shape (batch_size, output_dim) - outoput_dim is determined by
                hidden_dim and whether bidirectional or not
        """
        assert data.dim() == 3
        b, t = data.shape[0], data.shape[1]

        if mask is None:
            mask = torch.ones((b, t), dtype=torch.bool)

        lengths = mask.sum(axis=1)
        x_packed = pack_padded_sequence(
            data,
            lengths.clamp(1, data.size(1)),
            batch_first=True,
            enforce_sorted=False,
        )
        _, (h, _) = self.lstm(x_packed)

        if self.bidirectional:
            out = torch.cat([h[0, :, :], h[1, :, :]], dim=-1)
        else:
            out = h[-1, :, :]

        return out




class MaskedSequential(nn.Sequential):
    """
    A sequential container that overrides forward to take a mask as well as the usual
    input tensor. This mask is only applied to modules in _MASK_MODULES (which take
    the mask argument).
    """
    _MASK_MODULES = [
        LearnMaskedDefault,
        LSTM,
    ]
    def forward(self, input: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        for module in self:
            if any(isinstance(module, mask_type) for mask_type in self._MASK_MODULES):
                input = module(input, mask=mask)
            else:
                input = module(input)
        return input


def build_head():
    return MaskedSequential(
        LSTM(6, 4, bidirectional=True),
        nn.Linear(8, 8),
        LearnMaskedDefault(8),
    )


head = torch.compile(build_head())


def make():
    torch.manual_seed(0)
    x = torch.randn(2, 5, 6)
    mask = torch.tensor([[True] * 5, [True, True, False, False, False]])
    empty = torch.tensor([[True] * 5, [False] * 5])
    return build_head(), [(x, mask), (x, empty)]
