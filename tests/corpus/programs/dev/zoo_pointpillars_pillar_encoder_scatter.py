"""PointPillars PillarEncoder: point-count mask, then `for i in range(coors_batch[-1, 0] + 1)` scatter onto a BEV canvas.

Source: zhulf0804/PointPillars@620e6b0d07e4cb37b7b0114f26b934e8be92a0ba:pointpillars/model/pointpillars.py:46-119
Kept: PillarEncoder verbatim (offsets to the point and pillar centres, the
in-place feature overwrite, the arange < npoints mask, Conv1d + BN + max
pooling, the batch loop whose bound is the tensor `coors_batch[-1, 0] + 1`,
the boolean-indexed per-sample selection and the advanced-index canvas write).
Simplified: an 8x8 BEV grid, 4 points per pillar, 8 output channels; the
CUDA voxelization (PillarLayer) is replaced by ready-made pillars.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F


class PillarEncoder(nn.Module):
    def __init__(self, voxel_size, point_cloud_range, in_channel, out_channel):
        super().__init__()
        self.out_channel = out_channel
        self.vx, self.vy = voxel_size[0], voxel_size[1]
        self.x_offset = voxel_size[0] / 2 + point_cloud_range[0]
        self.y_offset = voxel_size[1] / 2 + point_cloud_range[1]
        self.x_l = int((point_cloud_range[3] - point_cloud_range[0]) / voxel_size[0])
        self.y_l = int((point_cloud_range[4] - point_cloud_range[1]) / voxel_size[1])

        self.conv = nn.Conv1d(in_channel, out_channel, 1, bias=False)
        self.bn = nn.BatchNorm1d(out_channel, eps=1e-3, momentum=0.01)

    def forward(self, pillars, coors_batch, npoints_per_pillar):
        '''
        pillars: (p1 + p2 + ... + pb, num_points, c), c = 4
        coors_batch: (p1 + p2 + ... + pb, 1 + 3)
        npoints_per_pillar: (p1 + p2 + ... + pb, )
        return:  (bs, out_channel, y_l, x_l)
        '''
        device = pillars.device
        # 1. calculate offset to the points center (in each pillar)
        offset_pt_center = pillars[:, :, :3] - torch.sum(pillars[:, :, :3], dim=1, keepdim=True) / npoints_per_pillar[:, None, None]

        # 2. calculate offset to the pillar center
        x_offset_pi_center = pillars[:, :, :1] - (coors_batch[:, None, 1:2] * self.vx + self.x_offset)
        y_offset_pi_center = pillars[:, :, 1:2] - (coors_batch[:, None, 2:3] * self.vy + self.y_offset)

        # 3. encoder
        features = torch.cat([pillars, offset_pt_center, x_offset_pi_center, y_offset_pi_center], dim=-1)
        features[:, :, 0:1] = x_offset_pi_center # tmp
        features[:, :, 1:2] = y_offset_pi_center # tmp

        # 4. find mask for (0, 0, 0) and update the encoded features
        voxel_ids = torch.arange(0, pillars.size(1)).to(device) # (num_points, )
        mask = voxel_ids[:, None] < npoints_per_pillar[None, :] # (num_points, p1 + p2 + ... + pb)
        mask = mask.permute(1, 0).contiguous()  # (p1 + p2 + ... + pb, num_points)
        features *= mask[:, :, None]

        # 5. embedding
        features = features.permute(0, 2, 1).contiguous()
        features = F.relu(self.bn(self.conv(features)))
        pooling_features = torch.max(features, dim=-1)[0] # (p1 + p2 + ... + pb, out_channels)

        # 6. pillar scatter
        batched_canvas = []
        bs = coors_batch[-1, 0] + 1
        for i in range(bs):
            cur_coors_idx = coors_batch[:, 0] == i
            cur_coors = coors_batch[cur_coors_idx, :]
            cur_features = pooling_features[cur_coors_idx]

            canvas = torch.zeros((self.x_l, self.y_l, self.out_channel), dtype=torch.float32, device=device)
            canvas[cur_coors[:, 1], cur_coors[:, 2]] = cur_features
            canvas = canvas.permute(2, 1, 0).contiguous()
            batched_canvas.append(canvas)
        batched_canvas = torch.stack(batched_canvas, dim=0) # (bs, in_channel, self.y_l, self.x_l)
        return batched_canvas


VOXEL_SIZE = [0.16, 0.16, 4]
POINT_CLOUD_RANGE = [0, -0.64, -3, 1.28, 0.64, 1]

pillar_encoder = torch.compile(PillarEncoder(VOXEL_SIZE, POINT_CLOUD_RANGE, in_channel=9, out_channel=8))


def _pillars(n_per_sample):
    g = torch.Generator().manual_seed(1)
    pillars, coors, npts = [], [], []
    for b, n in enumerate(n_per_sample):
        cells = torch.randperm(64, generator=g)[:n]
        xy = torch.stack([cells // 8, cells % 8], dim=1)
        coors.append(F.pad(torch.cat([xy, torch.zeros(n, 1, dtype=torch.long)], dim=1), (1, 0), value=b))
        cnt = torch.randint(1, 5, (n,), generator=g)
        pts = torch.rand(n, 4, 4, generator=g)
        pts = pts * (torch.arange(4)[None, :, None] < cnt[:, None, None])
        pillars.append(pts)
        npts.append(cnt.to(torch.int32))
    return torch.cat(pillars), torch.cat(coors), torch.cat(npts)


def make():
    torch.manual_seed(0)
    enc = PillarEncoder(VOXEL_SIZE, POINT_CLOUD_RANGE, in_channel=9, out_channel=8)
    return enc, [_pillars([5, 3]), _pillars([6])]
