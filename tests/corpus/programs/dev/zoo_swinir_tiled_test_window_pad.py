"""SwinIR's test script: the low-quality image is padded to a multiple of the window size by flip-and-concatenate, then `test()` runs the model whole or tile by tile (`args.tile`), accumulating patches and a count map with in-place `add_` on slices and dividing with `E.div_(W)` (no break expected).

Source: JingyunLiang/SwinIR@6545850fbf8df298df73d81f3e8cba638787c8bd:main_test_swinir.py:66-75,278-306; models/network_swinir.py:594-615
Kept: test() verbatim and the padding/cropping lines of main()'s inference block, wrapped
in an `inference(img_lq, model, args, window_size)` function; UpsampleOneStep verbatim.
Simplified: the network is conv_first + SwinIR's UpsampleOneStep (the lightweight
'pixelshuffledirect' tail) instead of the full SwinIR; args is an argparse.Namespace with
scale 2, tile 8 / None, tile_overlap 4; window size 4.
"""
import argparse

import torch
import torch.nn as nn


class UpsampleOneStep(nn.Sequential):
    """UpsampleOneStep module (the difference with Upsample is that it always only has 1conv + 1pixelshuffle)
       Used in lightweight SR to save parameters.

    Args:
        scale (int): Scale factor. Supported scales: 2^n and 3.
        num_feat (int): Channel number of intermediate features.

    """

    def __init__(self, scale, num_feat, num_out_ch, input_resolution=None):
        self.num_feat = num_feat
        self.input_resolution = input_resolution
        m = []
        m.append(nn.Conv2d(num_feat, (scale ** 2) * num_out_ch, 3, 1, 1))
        m.append(nn.PixelShuffle(scale))
        super(UpsampleOneStep, self).__init__(*m)

    def flops(self):
        H, W = self.input_resolution
        flops = H * W * self.num_feat * 3 * 9
        return flops


class TinySR(nn.Module):
    def __init__(self, upscale=2, num_feat=8):
        super().__init__()
        self.conv_first = nn.Conv2d(3, num_feat, 3, 1, 1)
        self.upsample = UpsampleOneStep(upscale, num_feat, 3)

    def forward(self, x):
        return self.upsample(torch.relu(self.conv_first(x)))


def test(img_lq, model, args, window_size):
    if args.tile is None:
        # test the image as a whole
        output = model(img_lq)
    else:
        # test the image tile by tile
        b, c, h, w = img_lq.size()
        tile = min(args.tile, h, w)
        assert tile % window_size == 0, "tile size should be a multiple of window_size"
        tile_overlap = args.tile_overlap
        sf = args.scale

        stride = tile - tile_overlap
        h_idx_list = list(range(0, h-tile, stride)) + [h-tile]
        w_idx_list = list(range(0, w-tile, stride)) + [w-tile]
        E = torch.zeros(b, c, h*sf, w*sf).type_as(img_lq)
        W = torch.zeros_like(E)

        for h_idx in h_idx_list:
            for w_idx in w_idx_list:
                in_patch = img_lq[..., h_idx:h_idx+tile, w_idx:w_idx+tile]
                out_patch = model(in_patch)
                out_patch_mask = torch.ones_like(out_patch)

                E[..., h_idx*sf:(h_idx+tile)*sf, w_idx*sf:(w_idx+tile)*sf].add_(out_patch)
                W[..., h_idx*sf:(h_idx+tile)*sf, w_idx*sf:(w_idx+tile)*sf].add_(out_patch_mask)
        output = E.div_(W)

    return output


def inference(img_lq, model, args, window_size):
    with torch.no_grad():
        # pad input image to be a multiple of window_size
        _, _, h_old, w_old = img_lq.size()
        h_pad = (h_old // window_size + 1) * window_size - h_old
        w_pad = (w_old // window_size + 1) * window_size - w_old
        img_lq = torch.cat([img_lq, torch.flip(img_lq, [2])], 2)[:, :, :h_old + h_pad, :]
        img_lq = torch.cat([img_lq, torch.flip(img_lq, [3])], 3)[:, :, :, :w_old + w_pad]
        output = test(img_lq, model, args, window_size)
        output = output[..., :h_old * args.scale, :w_old * args.scale]
    return output


def main(img_lq):
    args = argparse.Namespace(scale=2, tile=8, tile_overlap=4)
    model = TinySR(upscale=args.scale).eval()
    run = torch.compile(inference)
    return run(img_lq, model, args, 4)


def make():
    torch.manual_seed(0)
    model = TinySR(upscale=2).eval()
    img = torch.rand(1, 3, 13, 10)
    tiled = argparse.Namespace(scale=2, tile=8, tile_overlap=4)
    whole = argparse.Namespace(scale=2, tile=None, tile_overlap=4)
    return inference, [(img, model, tiled, 4), (img, model, whole, 4)]
