"""PETRv2 denoising head: `prepare_for_dn` in training builds noised GT queries with `torch.nonzero(unmask_label + unmask_bbox)`, `max(known_num)`, a masked label write and `torch.tensor(range(num))` from DataContainer-wrapped img_metas.

Source: megvii-research/PETR@f7525f93467a33707ef401c587a52d5e7b34de74:projects/mmdet3d_plugin/models/dense_heads/petrv2_dnhead.py:31-43,400-474,571-573
Kept: pos2posemb3d and prepare_for_dn verbatim (training and eval branches), the
`reference_points = self.reference_points.weight` -> prepare_for_dn -> query_embedding
plumbing of PETRHeadDN.forward.
Simplified: `.cuda()` dropped (CPU); mmdet3d's LiDARInstance3DBoxes/DataContainer are tiny
holders with `gravity_center`/`tensor`; no backbone features, positional encoder or
transformer (the head returns the query embeddings, attention mask and dn targets);
8 queries, scalar 3.
"""
import math

import torch
import torch.nn as nn


def pos2posemb3d(pos, num_pos_feats=128, temperature=10000):
    scale = 2 * math.pi
    pos = pos * scale
    dim_t = torch.arange(num_pos_feats, dtype=torch.float32, device=pos.device)
    dim_t = temperature ** (2 * (dim_t // 2) / num_pos_feats)
    pos_x = pos[..., 0, None] / dim_t
    pos_y = pos[..., 1, None] / dim_t
    pos_z = pos[..., 2, None] / dim_t
    pos_x = torch.stack((pos_x[..., 0::2].sin(), pos_x[..., 1::2].cos()), dim=-1).flatten(-2)
    pos_y = torch.stack((pos_y[..., 0::2].sin(), pos_y[..., 1::2].cos()), dim=-1).flatten(-2)
    pos_z = torch.stack((pos_z[..., 0::2].sin(), pos_z[..., 1::2].cos()), dim=-1).flatten(-2)
    posemb = torch.cat((pos_y, pos_x, pos_z), dim=-1)
    return posemb


class LiDARBoxes:
    def __init__(self, tensor):
        self.tensor = tensor

    @property
    def gravity_center(self):
        bottom_center = self.tensor[:, :3]
        gravity_center = torch.zeros_like(bottom_center)
        gravity_center[:, :2] = bottom_center[:, :2]
        gravity_center[:, 2] = bottom_center[:, 2] + self.tensor[:, 5] * 0.5
        return gravity_center


class DataContainer:
    def __init__(self, data):
        self._data = data


class PETRHeadDN(nn.Module):
    def __init__(self,
                 num_classes,
                 num_query=100,
                 scalar=5,
                 noise_scale=0.4,
                 noise_trans=0.0,
                 split=0.75,
                 **kwargs):
        super().__init__()
        self.num_classes = num_classes
        self.num_query = num_query
        self.embed_dims = 256
        self.scalar = scalar
        self.bbox_noise_scale = noise_scale
        self.bbox_noise_trans = noise_trans
        self.split = split
        self.pc_range = [-51.2, -51.2, -5.0, 51.2, 51.2, 3.0]
        self.reference_points = nn.Embedding(self.num_query, 3)
        self.query_embedding = nn.Sequential(
            nn.Linear(self.embed_dims*3//2, self.embed_dims),
            nn.ReLU(),
            nn.Linear(self.embed_dims, self.embed_dims),
        )

    def prepare_for_dn(self, batch_size, reference_points, img_metas):
        if self.training:
            targets = [torch.cat((img_meta['gt_bboxes_3d']._data.gravity_center, img_meta['gt_bboxes_3d']._data.tensor[:, 3:]),dim=1) for img_meta in img_metas ]
            labels = [img_meta['gt_labels_3d']._data for img_meta in img_metas ]
            known = [(torch.ones_like(t)) for t in labels]
            know_idx = known
            unmask_bbox = unmask_label = torch.cat(known)
            known_num = [t.size(0) for t in targets]
            labels = torch.cat([t for t in labels])
            boxes = torch.cat([t for t in targets])
            batch_idx = torch.cat([torch.full((t.size(0), ), i) for i, t in enumerate(targets)])

            known_indice = torch.nonzero(unmask_label + unmask_bbox)
            known_indice = known_indice.view(-1)
            # add noise
            groups = min(self.scalar, self.num_query // max(known_num))
            known_indice = known_indice.repeat(self.scalar, 1).view(-1)
            known_labels = labels.repeat(self.scalar, 1).view(-1).long().to(reference_points.device)
            known_bid = batch_idx.repeat(self.scalar, 1).view(-1)
            known_bboxs = boxes.repeat(self.scalar, 1).to(reference_points.device)
            known_bbox_center = known_bboxs[:, :3].clone()
            known_bbox_scale = known_bboxs[:, 3:6].clone()

            if self.bbox_noise_scale > 0:
                diff = known_bbox_scale / 2 + self.bbox_noise_trans
                rand_prob = torch.rand_like(known_bbox_center) * 2 - 1.0
                known_bbox_center += torch.mul(rand_prob,
                                            diff) * self.bbox_noise_scale
                known_bbox_center[..., 0:1] = (known_bbox_center[..., 0:1] - self.pc_range[0]) / (self.pc_range[3] - self.pc_range[0])
                known_bbox_center[..., 1:2] = (known_bbox_center[..., 1:2] - self.pc_range[1]) / (self.pc_range[4] - self.pc_range[1])
                known_bbox_center[..., 2:3] = (known_bbox_center[..., 2:3] - self.pc_range[2]) / (self.pc_range[5] - self.pc_range[2])
                known_bbox_center = known_bbox_center.clamp(min=0.0, max=1.0)
                mask = torch.norm(rand_prob, 2, 1) > self.split
                known_labels[mask] = self.num_classes

            single_pad = int(max(known_num))
            pad_size = int(single_pad * self.scalar)
            padding_bbox = torch.zeros(pad_size, 3).to(reference_points.device)
            padded_reference_points = torch.cat([padding_bbox, reference_points], dim=0).unsqueeze(0).repeat(batch_size, 1, 1)

            if len(known_num):
                map_known_indice = torch.cat([torch.tensor(range(num)) for num in known_num])  # [1,2, 1,2,3]
                map_known_indice = torch.cat([map_known_indice + single_pad * i for i in range(self.scalar)]).long()
            if len(known_bid):
                padded_reference_points[(known_bid.long(), map_known_indice)] = known_bbox_center.to(reference_points.device)

            tgt_size = pad_size + self.num_query
            attn_mask = torch.ones(tgt_size, tgt_size).to(reference_points.device) < 0
            # match query cannot see the reconstruct
            attn_mask[pad_size:, :pad_size] = True
            # reconstruct cannot see each other
            for i in range(self.scalar):
                if i == 0:
                    attn_mask[single_pad * i:single_pad * (i + 1), single_pad * (i + 1):pad_size] = True
                if i == self.scalar - 1:
                    attn_mask[single_pad * i:single_pad * (i + 1), :single_pad * i] = True
                else:
                    attn_mask[single_pad * i:single_pad * (i + 1), single_pad * (i + 1):pad_size] = True
                    attn_mask[single_pad * i:single_pad * (i + 1), :single_pad * i] = True

            mask_dict = {
                'known_indice': torch.as_tensor(known_indice).long(),
                'batch_idx': torch.as_tensor(batch_idx).long(),
                'map_known_indice': torch.as_tensor(map_known_indice).long(),
                'known_lbs_bboxes': (known_labels, known_bboxs),
                'know_idx': know_idx,
                'pad_size': pad_size
            }

        else:
            padded_reference_points = reference_points.unsqueeze(0).repeat(batch_size, 1, 1)
            attn_mask = None
            mask_dict = None

        return padded_reference_points, attn_mask, mask_dict

    def forward(self, batch_size, img_metas):
        reference_points = self.reference_points.weight
        reference_points, attn_mask, mask_dict = self.prepare_for_dn(batch_size, reference_points, img_metas)
        query_embeds = self.query_embedding(pos2posemb3d(reference_points))
        if mask_dict is None:
            return query_embeds, attn_mask
        return query_embeds, attn_mask, mask_dict['known_lbs_bboxes'], mask_dict['map_known_indice']


def train(head, img_metas):
    head.train()
    compiled = torch.compile(head)
    return compiled(len(img_metas), img_metas)


def _metas(counts):
    metas = []
    for n in counts:
        boxes = torch.cat([torch.rand(n, 3) * 40 - 20, torch.rand(n, 3) * 3 + 1,
                           torch.rand(n, 1)], dim=1)
        metas.append({'gt_bboxes_3d': DataContainer(LiDARBoxes(boxes)),
                      'gt_labels_3d': DataContainer(torch.randint(0, 4, (n,)))})
    return metas


def make():
    torch.manual_seed(0)
    head = PETRHeadDN(num_classes=4, num_query=8, scalar=3)
    return head.train(), [(2, _metas([2, 3])), (1, _metas([4]))]
