"""diffusers FirUpsample2D (ScoreSDE / NCSN++ "fir" upsampling): an FIR kernel built with torch.tensor from a tuple, builtin max() in F.pad and slice bounds of upfirdn2d_native, conv_transpose2d with computed output_padding (no break expected).

Source: huggingface/diffusers@v0.42.1:src/diffusers/models/upsampling.py:193-325,421-468
Kept: FirUpsample2D verbatim: the constructor (optional Conv2d_0), _upsample_2d
(the factor assert, `torch.tensor(kernel)` from the fir_kernel tuple, outer
product and normalisation, the use_conv path with flipped/permuted weights,
output_padding assert, conv_transpose2d and the padded upfirdn2d_native call,
and the plain upsampling path) and forward (bias added after the fused op);
upfirdn2d_native verbatim (pads with max(pad, 0), negative-pad cropping by
slicing, flipped kernel conv2d, strided downsampling).
Simplified: a block of one conv and one plain FIR upsampler on 4 channels.
"""
import torch
import torch.nn.functional as F
from torch import nn


def upfirdn2d_native(
    tensor: torch.Tensor,
    kernel: torch.Tensor,
    up: int = 1,
    down: int = 1,
    pad: tuple = (0, 0),
) -> torch.Tensor:
    up_x = up_y = up
    down_x = down_y = down
    pad_x0 = pad_y0 = pad[0]
    pad_x1 = pad_y1 = pad[1]

    _, channel, in_h, in_w = tensor.shape
    tensor = tensor.reshape(-1, in_h, in_w, 1)

    _, in_h, in_w, minor = tensor.shape
    kernel_h, kernel_w = kernel.shape

    out = tensor.view(-1, in_h, 1, in_w, 1, minor)
    out = F.pad(out, [0, 0, 0, up_x - 1, 0, 0, 0, up_y - 1])
    out = out.view(-1, in_h * up_y, in_w * up_x, minor)

    out = F.pad(out, [0, 0, max(pad_x0, 0), max(pad_x1, 0), max(pad_y0, 0), max(pad_y1, 0)])
    out = out.to(tensor.device)  # Move back to mps if necessary
    out = out[
        :,
        max(-pad_y0, 0) : out.shape[1] - max(-pad_y1, 0),
        max(-pad_x0, 0) : out.shape[2] - max(-pad_x1, 0),
        :,
    ]

    out = out.permute(0, 3, 1, 2)
    out = out.reshape([-1, 1, in_h * up_y + pad_y0 + pad_y1, in_w * up_x + pad_x0 + pad_x1])
    w = torch.flip(kernel, [0, 1]).view(1, 1, kernel_h, kernel_w)
    out = F.conv2d(out, w)
    out = out.reshape(
        -1,
        minor,
        in_h * up_y + pad_y0 + pad_y1 - kernel_h + 1,
        in_w * up_x + pad_x0 + pad_x1 - kernel_w + 1,
    )
    out = out.permute(0, 2, 3, 1)
    out = out[:, ::down_y, ::down_x, :]

    out_h = (in_h * up_y + pad_y0 + pad_y1 - kernel_h) // down_y + 1
    out_w = (in_w * up_x + pad_x0 + pad_x1 - kernel_w) // down_x + 1

    return out.view(-1, channel, out_h, out_w)


class FirUpsample2D(nn.Module):
    def __init__(
        self,
        channels: int = None,
        out_channels: int = None,
        use_conv: bool = False,
        fir_kernel: tuple = (1, 3, 3, 1),
    ):
        super().__init__()
        out_channels = out_channels if out_channels else channels
        if use_conv:
            self.Conv2d_0 = nn.Conv2d(channels, out_channels, kernel_size=3, stride=1, padding=1)
        self.use_conv = use_conv
        self.fir_kernel = fir_kernel
        self.out_channels = out_channels

    def _upsample_2d(
        self,
        hidden_states: torch.Tensor,
        weight: torch.Tensor = None,
        kernel: torch.Tensor = None,
        factor: int = 2,
        gain: float = 1,
    ) -> torch.Tensor:
        assert isinstance(factor, int) and factor >= 1

        # Setup filter kernel.
        if kernel is None:
            kernel = [1] * factor

        # setup kernel
        kernel = torch.tensor(kernel, dtype=torch.float32)
        if kernel.ndim == 1:
            kernel = torch.outer(kernel, kernel)
        kernel /= torch.sum(kernel)

        kernel = kernel * (gain * (factor**2))

        if self.use_conv:
            convH = weight.shape[2]
            convW = weight.shape[3]
            inC = weight.shape[1]

            pad_value = (kernel.shape[0] - factor) - (convW - 1)

            stride = (factor, factor)
            # Determine data dimensions.
            output_shape = (
                (hidden_states.shape[2] - 1) * factor + convH,
                (hidden_states.shape[3] - 1) * factor + convW,
            )
            output_padding = (
                output_shape[0] - (hidden_states.shape[2] - 1) * stride[0] - convH,
                output_shape[1] - (hidden_states.shape[3] - 1) * stride[1] - convW,
            )
            assert output_padding[0] >= 0 and output_padding[1] >= 0
            num_groups = hidden_states.shape[1] // inC

            # Transpose weights.
            weight = torch.reshape(weight, (num_groups, -1, inC, convH, convW))
            weight = torch.flip(weight, dims=[3, 4]).permute(0, 2, 1, 3, 4)
            weight = torch.reshape(weight, (num_groups * inC, -1, convH, convW))

            inverse_conv = F.conv_transpose2d(
                hidden_states,
                weight,
                stride=stride,
                output_padding=output_padding,
                padding=0,
            )

            output = upfirdn2d_native(
                inverse_conv,
                kernel.to(device=inverse_conv.device, dtype=inverse_conv.dtype),
                pad=((pad_value + 1) // 2 + factor - 1, pad_value // 2 + 1),
            )
        else:
            pad_value = kernel.shape[0] - factor
            output = upfirdn2d_native(
                hidden_states,
                kernel.to(device=hidden_states.device, dtype=hidden_states.dtype),
                up=factor,
                pad=((pad_value + 1) // 2 + factor - 1, pad_value // 2),
            )

        return output

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        if self.use_conv:
            height = self._upsample_2d(hidden_states, self.Conv2d_0.weight, kernel=self.fir_kernel)
            height = height + self.Conv2d_0.bias.reshape(1, -1, 1, 1)
        else:
            height = self._upsample_2d(hidden_states, kernel=self.fir_kernel, factor=2)

        return height


class FirUpBlock(nn.Module):
    def __init__(self, channels=4):
        super().__init__()
        self.upsample_conv = FirUpsample2D(channels, use_conv=True)
        self.upsample = FirUpsample2D(channels, use_conv=False)

    def forward(self, hidden_states, skip_sample):
        return self.upsample_conv(hidden_states) + self.upsample(skip_sample)


up_block = torch.compile(backend="eager")(FirUpBlock())


def make():
    torch.manual_seed(0)
    return FirUpBlock(), [(torch.randn(2, 4, 4, 4), torch.randn(2, 4, 4, 4)), (torch.randn(1, 4, 3, 5), torch.randn(1, 4, 3, 5))]
