"""Emformer-HuBERT FeatureEncoder: a linear projection of log-mel frames followed by time reduction, with `torch.full((B,), T)` dummy lengths when no lengths are given.

Source: pytorch/audio@01374e7d8cbe8070f06473c7073997d25faaeec9:src/torchaudio/prototype/models/_emformer_hubert.py:10-52
Kept: FeatureEncoder unchanged (Optional lengths, the None branch building
dummy lengths from the input shape and discarding the reduced ones, the
(output, lengths) tuple) and the _get_emformer_feature_extractor factory.
Simplified: _TimeReduction (torchaudio/models/rnnt.py) is reproduced
locally; the Emformer encoder and Wav2Vec2Model wrapper are not included.
80 -> 16 mel dims, stride 4, 10 frames.
"""
from typing import Optional, Tuple

import torch


class _TimeReduction(torch.nn.Module):
    r"""Coalesces frames along time dimension into a
    fewer number of frames with higher feature dimensionality.

    Args:
        stride (int): number of frames to merge for each output frame.
    """

    def __init__(self, stride: int) -> None:
        super().__init__()
        self.stride = stride

    def forward(self, input: torch.Tensor, lengths: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        B, T, D = input.shape
        num_frames = T - (T % self.stride)
        input = input[:, :num_frames, :]
        lengths = lengths.div(self.stride, rounding_mode="trunc")
        T_max = num_frames // self.stride

        output = input.reshape(B, T_max, D * self.stride)
        output = output.contiguous()
        return output, lengths


class FeatureEncoder(torch.nn.Module):
    """Extract features from log-mel spectrogram input. Consists of linear layer and time reduction layer.

    Args:
        input_dim (int): The feature dimension of log-mel spectrogram feature.
        output_dim (int): The feature dimension after linear layer.
        use_bias (bool): If ``True``, enable bias parameter in the linear layer.
        stride (int): Number of frames to merge for the output frame.
    """

    def __init__(self, input_dim: int, output_dim: int, use_bias: bool, stride: int):
        super().__init__()
        self.linear = torch.nn.Linear(input_dim, output_dim, bias=use_bias)
        self.time_reduction = _TimeReduction(stride)

    def forward(
        self, input: torch.Tensor, lengths: Optional[torch.Tensor]
    ) -> Tuple[torch.Tensor, Optional[torch.Tensor]]:
        """
        Args:
            input (torch.Tensor): The log-mel spectrogram input.
                Tensor with dimensions `(batch, time, input_dim)`.
            lengths (torch.Tensor or None): Valid length of each input sample.
                Tensor with dimension `(batch, )`.

        Returns:
            (torch.Tensor, torch.Tensor or None):
                torch.Tensor
                    Returned feature Tensor after linear layer and time reduction layer.
                    Tensor with dimensions `(batch, time // stride, output_dim)`.
                torch.Tensor or None
                    The reduced lengths Tensor.
        """
        output = self.linear(input)
        if lengths is None:
            B, T, _ = input.shape
            dummy_lengths = torch.full((B,), T)
            output, _ = self.time_reduction(output, dummy_lengths)
        else:
            output, lengths = self.time_reduction(output, lengths)
        return output, lengths


def _get_emformer_feature_extractor(input_dim: int, output_dim: int, use_bias: bool, stride: int) -> FeatureEncoder:
    """Construct FeatureEncoder for emformer model."""
    return FeatureEncoder(input_dim, output_dim, use_bias, stride)


feature_extractor = torch.compile(_get_emformer_feature_extractor(80, 16, False, 4))


def make():
    torch.manual_seed(0)
    features = torch.randn(2, 10, 80)
    lengths = torch.tensor([10, 7])
    return _get_emformer_feature_extractor(80, 16, False, 4), [(features, None), (features, lengths)]
