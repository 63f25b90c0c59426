"""ZoeDepth test-time inference: `DepthModel.infer` pads by `int(np.sqrt(h/2) * fh)`, runs the model, resizes back when the output is smaller, crops the padding and averages with a horizontally flipped pass.

Source: isl-org/ZoeDepth@2757ba4393fb324653b6efd2d08765cbcf0e760f:zoedepth/models/depth_model.py:35-128
Kept: DepthModel (device plumbing, `_infer` reading `self(x)['metric_depth']`,
`_infer_with_pad_aug`, `infer_with_flip_aug`, `infer`) verbatim.
Simplified: the real subclass (ZoeDepth: MiDaS core + metric bins) is replaced by
a two-conv head that returns `{'metric_depth': ...}` at half resolution, like
ZoeDepth's output does; no PIL/OpenCV entry points. Image 16x20.
"""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class DepthModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.device = 'cpu'

    def to(self, device) -> nn.Module:
        self.device = device
        return super().to(device)

    def forward(self, x, *args, **kwargs):
        raise NotImplementedError

    def _infer(self, x: torch.Tensor):
        """
        Inference interface for the model
        Args:
            x (torch.Tensor): input tensor of shape (b, c, h, w)
        Returns:
            torch.Tensor: output tensor of shape (b, 1, h, w)
        """
        return self(x)['metric_depth']

    def _infer_with_pad_aug(self, x: torch.Tensor, pad_input: bool=True, fh: float=3, fw: float=3, upsampling_mode: str='bicubic', padding_mode="reflect", **kwargs) -> torch.Tensor:
        # assert x is nchw and c = 3
        assert x.dim() == 4, "x must be 4 dimensional, got {}".format(x.dim())
        assert x.shape[1] == 3, "x must have 3 channels, got {}".format(x.shape[1])

        if pad_input:
            assert fh > 0 or fw > 0, "atlease one of fh and fw must be greater than 0"
            pad_h = int(np.sqrt(x.shape[2]/2) * fh)
            pad_w = int(np.sqrt(x.shape[3]/2) * fw)
            padding = [pad_w, pad_w]
            if pad_h > 0:
                padding += [pad_h, pad_h]

            x = F.pad(x, padding, mode=padding_mode, **kwargs)
        out = self._infer(x)
        if out.shape[-2:] != x.shape[-2:]:
            out = F.interpolate(out, size=(x.shape[2], x.shape[3]), mode=upsampling_mode, align_corners=False)
        if pad_input:
            # crop to the original size, handling the case where pad_h and pad_w is 0
            if pad_h > 0:
                out = out[:, :, pad_h:-pad_h,:]
            if pad_w > 0:
                out = out[:, :, :, pad_w:-pad_w]
        return out

    def infer_with_flip_aug(self, x, pad_input: bool=True, **kwargs) -> torch.Tensor:
        # infer with horizontal flip and average
        out = self._infer_with_pad_aug(x, pad_input=pad_input, **kwargs)
        out_flip = self._infer_with_pad_aug(torch.flip(x, dims=[3]), pad_input=pad_input, **kwargs)
        out = (out + torch.flip(out_flip, dims=[3])) / 2
        return out

    def infer(self, x, pad_input: bool=True, with_flip_aug: bool=True, **kwargs) -> torch.Tensor:
        if with_flip_aug:
            return self.infer_with_flip_aug(x, pad_input=pad_input, **kwargs)
        else:
            return self._infer_with_pad_aug(x, pad_input=pad_input, **kwargs)


class TinyZoeDepth(DepthModel):
    """Stand-in for ZoeDepth: metric depth at half the input resolution."""

    def __init__(self, min_depth=1e-3, max_depth=10):
        super().__init__()
        self.min_depth = min_depth
        self.max_depth = max_depth
        self.enc = nn.Conv2d(3, 8, 3, stride=2, padding=1)
        self.head = nn.Conv2d(8, 1, 1)

    def forward(self, x, return_final_centers=False, denorm=False, return_probs=False, **kwargs):
        b = torch.sigmoid(self.head(F.relu(self.enc(x))))
        out = self.min_depth + (self.max_depth - self.min_depth) * b
        output = dict(metric_depth=out)
        return output


def main():
    model = TinyZoeDepth().eval()
    infer = torch.compile(model.infer)
    return infer


def make():
    torch.manual_seed(0)
    x = torch.rand(1, 3, 16, 20)
    model = TinyZoeDepth().eval()
    return model.infer, [
        (x,),
        (x, False),
        (x, True, False),
    ]
