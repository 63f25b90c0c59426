"""torchvision RAFT CorrBlock: shape ValueErrors, `self.corr_pyramid` list rebuilt on the module each call, grid_sample lookups (no break).

Source: pytorch/vision@v0.29.2:torchvision/models/optical_flow/raft.py:360-431; torchvision/models/optical_flow/_utils.py:8-26
Kept: build_pyramid (the fmap shape check, the min-size check with `any(...)`
over shape dims, corr volume, `self.corr_pyramid = [...]` plus appends of
avg-pooled levels), index_pyramid (meshgrid delta, per-level grid_sample with
the halving coords, the output-shape ValueError), _compute_corr_volume,
grid_sample and make_coords_grid.
Simplified: 2 levels, radius 1; 4x4 feature maps with 4 channels.
"""
import torch
import torch.nn.functional as F
from torch import nn


def grid_sample(img, absolute_grid, mode="bilinear", align_corners=None):
    h, w = img.shape[-2:]
    xgrid, ygrid = absolute_grid.split([1, 1], dim=-1)
    xgrid = 2 * xgrid / (w - 1) - 1
    if h > 1:
        ygrid = 2 * ygrid / (h - 1) - 1
    normalized_grid = torch.cat([xgrid, ygrid], dim=-1)
    return F.grid_sample(img, normalized_grid, mode=mode, align_corners=align_corners)


def make_coords_grid(batch_size: int, h: int, w: int, device: str = "cpu"):
    device = torch.device(device)
    coords = torch.meshgrid(torch.arange(h, device=device), torch.arange(w, device=device), indexing="ij")
    coords = torch.stack(coords[::-1], dim=0).float()
    return coords[None].repeat(batch_size, 1, 1, 1)


class CorrBlock(nn.Module):
    def __init__(self, *, num_levels: int = 2, radius: int = 1):
        super().__init__()
        self.num_levels = num_levels
        self.radius = radius
        self.corr_pyramid = [torch.tensor(0)]
        self.out_channels = num_levels * (2 * radius + 1) ** 2

    def build_pyramid(self, fmap1, fmap2):
        if fmap1.shape != fmap2.shape:
            raise ValueError(f"Input feature maps should have the same shape, instead got {fmap1.shape} (fmap1.shape) != {fmap2.shape} (fmap2.shape)")
        min_fmap_size = 2 * (2 ** (self.num_levels - 1))
        if any(fmap_size < min_fmap_size for fmap_size in fmap1.shape[-2:]):
            raise ValueError(f"Feature maps are too small to be down-sampled by the correlation pyramid. H and W of feature maps should be at least {min_fmap_size}; got: {fmap1.shape[-2:]}.")
        corr_volume = self._compute_corr_volume(fmap1, fmap2)
        batch_size, h, w, num_channels, _, _ = corr_volume.shape
        corr_volume = corr_volume.reshape(batch_size * h * w, num_channels, h, w)
        self.corr_pyramid = [corr_volume]
        for _ in range(self.num_levels - 1):
            corr_volume = F.avg_pool2d(corr_volume, kernel_size=2, stride=2)
            self.corr_pyramid.append(corr_volume)

    def index_pyramid(self, centroids_coords):
        neighborhood_side_len = 2 * self.radius + 1
        di = torch.linspace(-self.radius, self.radius, neighborhood_side_len)
        dj = torch.linspace(-self.radius, self.radius, neighborhood_side_len)
        delta = torch.stack(torch.meshgrid(di, dj, indexing="ij"), dim=-1).to(centroids_coords.device)
        delta = delta.view(1, neighborhood_side_len, neighborhood_side_len, 2)
        batch_size, _, h, w = centroids_coords.shape
        centroids_coords = centroids_coords.permute(0, 2, 3, 1).reshape(batch_size * h * w, 1, 1, 2)
        indexed_pyramid = []
        for corr_volume in self.corr_pyramid:
            sampling_coords = centroids_coords + delta
            indexed_corr_volume = grid_sample(corr_volume, sampling_coords, align_corners=True, mode="bilinear").view(batch_size, h, w, -1)
            indexed_pyramid.append(indexed_corr_volume)
            centroids_coords = centroids_coords / 2
        corr_features = torch.cat(indexed_pyramid, dim=-1).permute(0, 3, 1, 2).contiguous()
        expected_output_shape = (batch_size, self.out_channels, h, w)
        if corr_features.shape != expected_output_shape:
            raise ValueError(f"Output shape of index pyramid is incorrect. Should be {expected_output_shape}, got {corr_features.shape}")
        return corr_features

    def _compute_corr_volume(self, fmap1, fmap2):
        batch_size, num_channels, h, w = fmap1.shape
        fmap1 = fmap1.view(batch_size, num_channels, h * w)
        fmap2 = fmap2.view(batch_size, num_channels, h * w)
        corr = torch.matmul(fmap1.transpose(1, 2), fmap2)
        corr = corr.view(batch_size, h, w, 1, h, w)
        return corr / torch.sqrt(torch.tensor(num_channels))

    def forward(self, fmap1, fmap2, flow):
        self.build_pyramid(fmap1, fmap2)
        coords = make_coords_grid(fmap1.shape[0], fmap1.shape[2], fmap1.shape[3]) + flow
        return self.index_pyramid(coords)


corr_block = torch.compile(CorrBlock(num_levels=2, radius=1))


def make():
    torch.manual_seed(0)
    return CorrBlock(num_levels=2, radius=1), [(torch.randn(1, 4, 4, 4), torch.randn(1, 4, 4, 4), torch.zeros(1, 2, 4, 4))]
