"""PyKEEN ConvE interaction (functional form): broadcast_cat over a Python shape loop, then
`x.view(-1, numpy.prod(x.shape[-3:]))` before the 1D encoder.

Source: pykeen/pykeen@010bc7b4b3bdbccaed7ef4f6b99dee141a0677a2:src/pykeen/nn/functional.py:69-84,203-262
(_add_cuda_warning, conve_interaction), src/pykeen/utils.py:277-279,533-567 (is_cudnn_error, broadcast_cat),
src/pykeen/nn/modules.py:103-132,448-543 (Interaction.forward / _prepare_for_functional, ConvEInteraction)
Kept: the class-level `func = conve_interaction` dispatch through `self.__class__.func(**kwargs)`, the
_add_cuda_warning try/except wrapper, broadcast_cat verbatim, the hr2d/hr1d Sequential built from a list with
optional BatchNorm layers filtered by `is not None`, the tuple tail representation (t, t_bias).
Simplified: embedding_dim 8 (1 x 2 x 4 image), 2 output channels, 2x2 kernel; the shape resolution helper is
replaced by the resolved numbers; logging left out.
"""
import numpy
import torch
from torch import nn

_CUDNN_ERROR = 'cuDNN error: CUDNN_STATUS_NOT_SUPPORTED. This error may appear if you passed in a non-contiguous input.'


def is_cudnn_error(runtime_error: RuntimeError) -> bool:
    """Check whether the caught RuntimeError was due to a CUDNN error."""
    return _CUDNN_ERROR in runtime_error.args[0]


def broadcast_cat(x, y, dim):
    """Concatenate with broadcasting."""
    if x.ndimension() != y.ndimension():
        raise ValueError
    if dim < 0:
        dim = x.ndimension() + dim
    x_rep, y_rep = [], []
    for d, (xd, yd) in enumerate(zip(x.shape, y.shape)):
        xr = yr = 1
        if d != dim and xd != yd:
            if xd == 1:
                xr = yd
            elif yd == 1:
                yr = xd
            else:
                raise ValueError
        x_rep.append(xr)
        y_rep.append(yr)
    return torch.cat([x.repeat(*x_rep), y.repeat(*y_rep)], dim=dim)


def _add_cuda_warning(func):
    def wrapped(*args, **kwargs):
        try:
            return func(*args, **kwargs)
        except RuntimeError as e:
            if not is_cudnn_error(e):
                raise e
            raise RuntimeError(
                '\nThis code crash might have been caused by a CUDA bug, see '
                'https://github.com/allenai/allennlp/issues/2888, '
                'which causes the code to crash during evaluation mode.\n'
                'To avoid this error, the batch size has to be reduced.',
            ) from e

    return wrapped


@_add_cuda_warning
def conve_interaction(h, r, t, t_bias, input_channels, embedding_height, embedding_width, hr2d, hr1d):
    # repeat if necessary, and concat head and relation, batch_size', num_input_channels, 2*height, width
    # with batch_size' = batch_size * num_heads * num_relations
    x = broadcast_cat(
        h.view(*h.shape[:-1], input_channels, embedding_height, embedding_width),
        r.view(*r.shape[:-1], input_channels, embedding_height, embedding_width),
        dim=-2,
    ).view(-1, input_channels, 2 * embedding_height, embedding_width)

    # batch_size', num_input_channels, 2*height, width
    x = hr2d(x)

    # batch_size', num_output_channels * (2 * height - kernel_height + 1) * (width - kernel_width + 1)
    x = x.view(-1, numpy.prod(x.shape[-3:]))
    x = hr1d(x)

    # reshape: (batch_size', embedding_dim) -> (b, h, r, 1, d)
    x = x.view(-1, h.shape[1], r.shape[2], 1, h.shape[-1])

    # For efficient calculation, each of the convolved [h, r] rows has only to be multiplied with one t row
    # output_shape: (batch_size, num_heads, num_relations, num_tails)
    t = t.transpose(-1, -2)
    x = (x @ t).squeeze(dim=-2)

    # add bias term
    return x + t_bias.squeeze(dim=-1)


class Interaction(nn.Module):
    func = None

    def _prepare_hrt_for_functional(self, h, r, t):
        return dict(h=h, r=r, t=t)

    def _prepare_state_for_functional(self):
        return dict()

    def _prepare_for_functional(self, h, r, t):
        """Conversion utility to prepare the arguments for the functional form."""
        kwargs = self._prepare_hrt_for_functional(h=h, r=r, t=t)
        kwargs.update(self._prepare_state_for_functional())
        return kwargs

    def forward(self, h, r, t):
        return self.__class__.func(**self._prepare_for_functional(h=h, r=r, t=t))


class ConvEInteraction(Interaction):
    """ConvE interaction function."""

    func = conve_interaction

    def __init__(
        self,
        input_channels=1,
        output_channels=2,
        embedding_height=2,
        embedding_width=4,
        kernel_height=2,
        kernel_width=2,
        input_dropout=0.2,
        output_dropout=0.3,
        feature_map_dropout=0.2,
        embedding_dim=8,
        apply_batch_normalization=True,
    ):
        super().__init__()
        if input_channels * embedding_height * embedding_width != embedding_dim:
            raise ValueError(
                f'Product of input channels ({input_channels}), height ({embedding_height}), and width '
                f'({embedding_width}) does not equal target embedding dimension ({embedding_dim})',
            )

        # encoders
        # 1: 2D encoder: BN?, DO, Conv, BN?, Act, DO
        hr2d_layers = [
            nn.BatchNorm2d(input_channels) if apply_batch_normalization else None,
            nn.Dropout(input_dropout),
            nn.Conv2d(
                in_channels=input_channels,
                out_channels=output_channels,
                kernel_size=(kernel_height, kernel_width),
                stride=1,
                padding=0,
                bias=True,
            ),
            nn.BatchNorm2d(output_channels) if apply_batch_normalization else None,
            nn.ReLU(),
            nn.Dropout2d(feature_map_dropout),
        ]
        self.hr2d = nn.Sequential(*(layer for layer in hr2d_layers if layer is not None))

        # 2: 1D encoder: FC, DO, BN?, Act
        num_in_features = (
            output_channels
            * (2 * embedding_height - kernel_height + 1)
            * (embedding_width - kernel_width + 1)
        )
        hr1d_layers = [
            nn.Linear(num_in_features, embedding_dim),
            nn.Dropout(output_dropout),
            nn.BatchNorm1d(embedding_dim) if apply_batch_normalization else None,
            nn.ReLU(),
        ]
        self.hr1d = nn.Sequential(*(layer for layer in hr1d_layers if layer is not None))

        # store reshaping dimensions
        self.embedding_height = embedding_height
        self.embedding_width = embedding_width
        self.input_channels = input_channels

    @staticmethod
    def _prepare_hrt_for_functional(h, r, t):
        return dict(h=h, r=r, t=t[0], t_bias=t[1])

    def _prepare_state_for_functional(self):
        return dict(
            input_channels=self.input_channels,
            embedding_height=self.embedding_height,
            embedding_width=self.embedding_width,
            hr2d=self.hr2d,
            hr1d=self.hr1d,
        )


interaction = torch.compile(ConvEInteraction().eval())


def make():
    torch.manual_seed(0)
    # (batch_size, num_heads, 1, 1, d), (batch_size, 1, num_relations, 1, d), (batch_size, 1, 1, num_tails, d)
    h = torch.randn(3, 1, 1, 1, 8)
    r = torch.randn(3, 1, 1, 1, 8)
    t = torch.randn(3, 1, 1, 5, 8)
    t_bias = torch.randn(3, 1, 1, 5, 1)
    return ConvEInteraction().eval(), [(h, r, (t, t_bias))]
