"""EnCodec `EncodecConv1d`: stride / kernel size / total padding are stored as 0-d tensor buffers, so the extra
padding is a tensor and `_pad1d` does `max(padding_left, padding_right)`, `if length <= max_pad:` and
`nn.functional.pad(..., paddings)` with tensor pads.

Source: huggingface/transformers@v5.23.0:src/transformers/models/encodec/modeling_encodec.py:75-175 (EncodecConv1d)
Census: penguinwu/oss-model-graph-break-corpus explain_results (pt2.10): EncodecModel / MimiModel eval+train,
"Graph break in user code at torch/nn/functional.py:5418" reached from `embeddings = self.encoder(input_values)`
(the padding call), 29-30 breaks per mode for EncodecModel.
Kept: the buffers built in __init__, `_get_extra_padding_for_conv1d`, `_pad1d` (reflect workaround for short
inputs), forward's causal / asymmetric padding and the time_group_norm branch.
Simplified: no weight_norm (norm_type "time_group_norm"); one conv.
"""
import torch
from torch import nn


class EncodecConfig:
    norm_type = "time_group_norm"
    use_causal_conv = False
    pad_mode = "reflect"


class EncodecConv1d(nn.Module):
    """Conv1d with asymmetric or causal padding and normalization."""

    def __init__(self, config, in_channels, out_channels, kernel_size, stride=1, dilation=1):
        super().__init__()
        self.causal = config.use_causal_conv
        self.pad_mode = config.pad_mode
        self.norm_type = config.norm_type

        if self.norm_type not in ["weight_norm", "time_group_norm"]:
            raise ValueError(
                f'self.norm_type must be one of `"weight_norm"`, `"time_group_norm"`), got {self.norm_type}'
            )

        self.conv = nn.Conv1d(in_channels, out_channels, kernel_size, stride, dilation=dilation)
        if self.norm_type == "time_group_norm":
            self.norm = nn.GroupNorm(1, out_channels)

        kernel_size = self.conv.kernel_size[0]
        stride = torch.tensor(self.conv.stride[0], dtype=torch.int64)
        dilation = self.conv.dilation[0]

        # Effective kernel size with dilations.
        kernel_size = torch.tensor((kernel_size - 1) * dilation + 1, dtype=torch.int64)

        self.stride = nn.Buffer(stride, persistent=False)
        self.kernel_size = nn.Buffer(kernel_size, persistent=False)
        self.padding_total = nn.Buffer(kernel_size - stride, persistent=False)

    def _get_extra_padding_for_conv1d(self, hidden_states):
        """See `pad_for_conv1d`."""
        length = hidden_states.shape[-1]
        n_frames = (length - self.kernel_size + self.padding_total) / self.stride + 1
        n_frames = torch.ceil(n_frames).to(torch.int64) - 1
        ideal_length = n_frames * self.stride + self.kernel_size - self.padding_total

        return ideal_length - length

    @staticmethod
    def _pad1d(hidden_states, paddings, mode="zero", value=0.0):
        """Tiny wrapper around torch.nn.functional.pad, just to allow for reflect padding on small input.
        If this is the case, we insert extra 0 padding to the right before the reflection happens.
        """
        length = hidden_states.shape[-1]
        padding_left, padding_right = paddings
        if mode != "reflect":
            return nn.functional.pad(hidden_states, paddings, mode, value)

        max_pad = max(padding_left, padding_right)
        extra_pad = 0
        if length <= max_pad:
            extra_pad = max_pad - length + 1
            hidden_states = nn.functional.pad(hidden_states, (0, extra_pad))
        padded = nn.functional.pad(hidden_states, paddings, mode, value)
        end = padded.shape[-1] - extra_pad
        return padded[..., :end]

    def forward(self, hidden_states):
        extra_padding = self._get_extra_padding_for_conv1d(hidden_states)

        if self.causal:
            # Left padding for causal
            hidden_states = self._pad1d(hidden_states, (self.padding_total, extra_padding), mode=self.pad_mode)
        else:
            # Asymmetric padding required for odd strides
            padding_right = self.padding_total // 2
            padding_left = self.padding_total - padding_right
            hidden_states = self._pad1d(
                hidden_states, (padding_left, padding_right + extra_padding), mode=self.pad_mode
            )

        hidden_states = self.conv(hidden_states)

        if self.norm_type == "time_group_norm":
            hidden_states = self.norm(hidden_states)

        return hidden_states


conv = torch.compile(EncodecConv1d(EncodecConfig(), 2, 3, kernel_size=7, stride=2))


def make():
    torch.manual_seed(0)
    return EncodecConv1d(EncodecConfig(), 2, 3, kernel_size=7, stride=2), [
        (torch.randn(1, 2, 16),),
        (torch.randn(1, 2, 4),),
    ]
