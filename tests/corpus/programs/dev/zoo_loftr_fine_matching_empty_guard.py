"""LoFTR's FineMatching: `M == 0` early return on an empty match set, window size through `int(math.sqrt(WW))`, sizes stored on `self`, and a heatmap expectation (no break).

Source: zju3dv/LoFTR@df7ca80f917334b94cfbe32cc2901e09a80e70a8:src/loftr/utils/fine_matching.py:1-74
Kept: FineMatching.forward with the corner-case branch and its
`assert self.training == False`, the per-call `self.M, self.W, ...`
attributes, the std computation, and get_fine_match under no_grad reading
them back, with the `'scale0' in data` conditional expression.
Simplified: kornia's dsnt.spatial_expectation2d and create_meshgrid are
written out below with the same semantics (normalized coordinates);
windows of 5x5 with 8 channels.
"""
import math
import torch
import torch.nn as nn


def create_meshgrid(height, width, normalized_coordinates=True, device=None):
    xs = torch.linspace(0, width - 1, width, device=device)
    ys = torch.linspace(0, height - 1, height, device=device)
    if normalized_coordinates:
        xs = (xs / (width - 1) - 0.5) * 2
        ys = (ys / (height - 1) - 0.5) * 2
    base_grid = torch.stack(torch.meshgrid([xs, ys], indexing="ij"), dim=-1)  # WxHx2
    return base_grid.permute(1, 0, 2).unsqueeze(0)  # 1xHxWx2


def spatial_expectation2d(input, normalized_coordinates=True):
    batch_size, channels, height, width = input.shape
    grid = create_meshgrid(height, width, normalized_coordinates, input.device).to(input.dtype)
    pos_x = grid[..., 0].reshape(-1)
    pos_y = grid[..., 1].reshape(-1)
    input_flat = input.view(batch_size, channels, -1)
    expected_y = torch.sum(pos_y * input_flat, -1, keepdim=True)
    expected_x = torch.sum(pos_x * input_flat, -1, keepdim=True)
    output = torch.cat([expected_x, expected_y], -1)
    return output.view(batch_size, channels, 2)


class FineMatching(nn.Module):
    """FineMatching with s2d paradigm"""

    def __init__(self):
        super().__init__()

    def forward(self, feat_f0, feat_f1, data):
        """
        Args:
            feat0 (torch.Tensor): [M, WW, C]
            feat1 (torch.Tensor): [M, WW, C]
            data (dict)
        Update:
            data (dict):{
                'expec_f' (torch.Tensor): [M, 3],
                'mkpts0_f' (torch.Tensor): [M, 2],
                'mkpts1_f' (torch.Tensor): [M, 2]}
        """
        M, WW, C = feat_f0.shape
        W = int(math.sqrt(WW))
        scale = data['hw0_i'][0] / data['hw0_f'][0]
        self.M, self.W, self.WW, self.C, self.scale = M, W, WW, C, scale

        # corner case: if no coarse matches found
        if M == 0:
            assert self.training == False, "M is always >0, when training, see coarse_matching.py"
            # logger.warning('No matches found in coarse-level.')
            data.update({
                'expec_f': torch.empty(0, 3, device=feat_f0.device),
                'mkpts0_f': data['mkpts0_c'],
                'mkpts1_f': data['mkpts1_c'],
            })
            return

        feat_f0_picked = feat_f0_picked = feat_f0[:, WW//2, :]
        sim_matrix = torch.einsum('mc,mrc->mr', feat_f0_picked, feat_f1)
        softmax_temp = 1. / C**.5
        heatmap = torch.softmax(softmax_temp * sim_matrix, dim=1).view(-1, W, W)

        # compute coordinates from heatmap
        coords_normalized = spatial_expectation2d(heatmap[None], True)[0]  # [M, 2]
        grid_normalized = create_meshgrid(W, W, True, heatmap.device).reshape(1, -1, 2)  # [1, WW, 2]

        # compute std over <x, y>
        var = torch.sum(grid_normalized**2 * heatmap.view(-1, WW, 1), dim=1) - coords_normalized**2  # [M, 2]
        std = torch.sum(torch.sqrt(torch.clamp(var, min=1e-10)), -1)  # [M]  clamp needed for numerical stability

        # for fine-level supervision
        data.update({'expec_f': torch.cat([coords_normalized, std.unsqueeze(1)], -1)})

        # compute absolute kpt coords
        self.get_fine_match(coords_normalized, data)

    @torch.no_grad()
    def get_fine_match(self, coords_normed, data):
        W, WW, C, scale = self.W, self.WW, self.C, self.scale

        # mkpts0_f and mkpts1_f
        mkpts0_f = data['mkpts0_c']
        scale1 = scale * data['scale1'][data['b_ids']] if 'scale0' in data else scale
        mkpts1_f = data['mkpts1_c'] + (coords_normed * (W // 2) * scale1)[:len(data['mconf'])]

        data.update({
            "mkpts0_f": mkpts0_f,
            "mkpts1_f": mkpts1_f
        })


def make():
    torch.manual_seed(0)
    m = 6
    data = {
        'hw0_i': (64, 64), 'hw0_f': (32, 32),
        'mkpts0_c': torch.rand(m, 2) * 64, 'mkpts1_c': torch.rand(m, 2) * 64,
        'mconf': torch.rand(m), 'b_ids': torch.tensor([0, 0, 0, 1, 1, 1]),
    }
    scaled = dict(data, scale0=torch.ones(2, 2), scale1=torch.full((2, 2), 1.5))
    empty = {
        'hw0_i': (64, 64), 'hw0_f': (32, 32),
        'mkpts0_c': torch.zeros(0, 2), 'mkpts1_c': torch.zeros(0, 2),
        'mconf': torch.zeros(0), 'b_ids': torch.zeros(0, dtype=torch.long),
    }
    feats = (torch.randn(m, 25, 8), torch.randn(m, 25, 8))
    return FineMatching().eval(), [
        feats + (data,),
        feats + (scaled,),
        (torch.zeros(0, 25, 8), torch.zeros(0, 25, 8), empty),
    ]


def main():
    fine_matching = torch.compile(FineMatching().eval())
    return fine_matching
