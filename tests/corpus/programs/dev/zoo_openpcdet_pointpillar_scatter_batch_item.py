"""OpenPCDet PointPillarScatter: `batch_size = coords[:, 0].max().int().item() + 1`, then per sample `coords[batch_mask, :]` and `pillar_features[batch_mask, :]`.

Source: open-mmlab/OpenPCDet@351ba7b79535dba034ef8c51757fa3a17ce5a647:pcdet/models/backbones_2d/map_to_bev/pointpillar_scatter.py:1-37
Kept: PointPillarScatter verbatim (model_cfg.NUM_BEV_FEATURES, the grid
size unpacking, the batch_dict in and out, the per-sample boolean masks and
the scatter by flat index).
Simplified: model_cfg is a small attribute class (EasyDict in OpenPCDet);
grid 4 x 3 x 1, 5 BEV features.
"""
import torch
import torch.nn as nn


class ScatterConfig:
    NAME = "PointPillarScatter"
    NUM_BEV_FEATURES = 5


class PointPillarScatter(nn.Module):
    def __init__(self, model_cfg, grid_size, **kwargs):
        super().__init__()

        self.model_cfg = model_cfg
        self.num_bev_features = self.model_cfg.NUM_BEV_FEATURES
        self.nx, self.ny, self.nz = grid_size
        assert self.nz == 1

    def forward(self, batch_dict, **kwargs):
        pillar_features, coords = batch_dict['pillar_features'], batch_dict['voxel_coords']
        batch_spatial_features = []
        batch_size = coords[:, 0].max().int().item() + 1
        for batch_idx in range(batch_size):
            spatial_feature = torch.zeros(
                self.num_bev_features,
                self.nz * self.nx * self.ny,
                dtype=pillar_features.dtype,
                device=pillar_features.device)

            batch_mask = coords[:, 0] == batch_idx
            this_coords = coords[batch_mask, :]
            indices = this_coords[:, 1] + this_coords[:, 2] * self.nx + this_coords[:, 3]
            indices = indices.type(torch.long)
            pillars = pillar_features[batch_mask, :]
            pillars = pillars.t()
            spatial_feature[:, indices] = pillars
            batch_spatial_features.append(spatial_feature)

        batch_spatial_features = torch.stack(batch_spatial_features, 0)
        batch_spatial_features = batch_spatial_features.view(batch_size, self.num_bev_features * self.nz, self.ny, self.nx)
        batch_dict['spatial_features'] = batch_spatial_features
        return batch_dict


def build_map_to_bev(grid_size):
    return torch.compile(PointPillarScatter(ScatterConfig(), grid_size=grid_size))


def _batch(samples, pillars_per_sample):
    rows = []
    for b in range(samples):
        for p in range(pillars_per_sample):
            # (batch_idx, z, y, x)
            rows.append([b, 0, p % 3, (p * 2 + b) % 4])
    coords = torch.tensor(rows, dtype=torch.int32)
    return {
        'pillar_features': torch.randn(coords.shape[0], 5),
        'voxel_coords': coords,
    }


def make():
    torch.manual_seed(0)
    model = PointPillarScatter(ScatterConfig(), grid_size=(4, 3, 1))
    return model, [(_batch(2, 3),), (_batch(1, 4),)]
