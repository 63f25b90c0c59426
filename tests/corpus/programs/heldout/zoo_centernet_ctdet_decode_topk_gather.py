"""CenterNet's ctdet_decode: heatmap max-pool NMS, two-stage topk with `(topk_inds / width).int()`, gathers through `_transpose_and_gather_feat`, optional offset and class-specific wh (no break expected).

Source: xingyizhou/CenterNet@4c50fd3a46bdf63dbf2082c5cbb3458d39579e6c:src/lib/models/decode.py:9-15,103-123,464-495
Also: src/lib/models/utils.py:12-24 (_gather_feat, _transpose_and_gather_feat).
Kept: _nms, _topk, _gather_feat (with its unused mask argument),
_transpose_and_gather_feat and ctdet_decode verbatim, including the
`reg is not None` and `cat_spec_wh` branches.
Simplified: decoded directly on random heatmaps (the demo's sigmoid_ is applied
by the caller in make()), K=5 on a 2-class 6x6 map.
"""
import torch
import torch.nn as nn


def _gather_feat(feat, ind, mask=None):
    dim = feat.size(2)
    ind = ind.unsqueeze(2).expand(ind.size(0), ind.size(1), dim)
    feat = feat.gather(1, ind)
    if mask is not None:
        mask = mask.unsqueeze(2).expand_as(feat)
        feat = feat[mask]
        feat = feat.view(-1, dim)
    return feat


def _transpose_and_gather_feat(feat, ind):
    feat = feat.permute(0, 2, 3, 1).contiguous()
    feat = feat.view(feat.size(0), -1, feat.size(3))
    feat = _gather_feat(feat, ind)
    return feat


def _nms(heat, kernel=3):
    pad = (kernel - 1) // 2

    hmax = nn.functional.max_pool2d(
        heat, (kernel, kernel), stride=1, padding=pad)
    keep = (hmax == heat).float()
    return heat * keep


def _topk(scores, K=40):
    batch, cat, height, width = scores.size()

    topk_scores, topk_inds = torch.topk(scores.view(batch, cat, -1), K)

    topk_inds = topk_inds % (height * width)
    topk_ys = (topk_inds / width).int().float()
    topk_xs = (topk_inds % width).int().float()

    topk_score, topk_ind = torch.topk(topk_scores.view(batch, -1), K)
    topk_clses = (topk_ind / K).int()
    topk_inds = _gather_feat(
        topk_inds.view(batch, -1, 1), topk_ind).view(batch, K)
    topk_ys = _gather_feat(topk_ys.view(batch, -1, 1), topk_ind).view(batch, K)
    topk_xs = _gather_feat(topk_xs.view(batch, -1, 1), topk_ind).view(batch, K)

    return topk_score, topk_inds, topk_clses, topk_ys, topk_xs


def ctdet_decode(heat, wh, reg=None, cat_spec_wh=False, K=100):
    batch, cat, height, width = heat.size()

    # heat = torch.sigmoid(heat)
    # perform nms on heatmaps
    heat = _nms(heat)

    scores, inds, clses, ys, xs = _topk(heat, K=K)
    if reg is not None:
        reg = _transpose_and_gather_feat(reg, inds)
        reg = reg.view(batch, K, 2)
        xs = xs.view(batch, K, 1) + reg[:, :, 0:1]
        ys = ys.view(batch, K, 1) + reg[:, :, 1:2]
    else:
        xs = xs.view(batch, K, 1) + 0.5
        ys = ys.view(batch, K, 1) + 0.5
    wh = _transpose_and_gather_feat(wh, inds)
    if cat_spec_wh:
        wh = wh.view(batch, K, cat, 2)
        clses_ind = clses.view(batch, K, 1, 1).expand(batch, K, 1, 2).long()
        wh = wh.gather(2, clses_ind).view(batch, K, 2)
    else:
        wh = wh.view(batch, K, 2)
    clses = clses.view(batch, K, 1).float()
    scores = scores.view(batch, K, 1)
    bboxes = torch.cat([xs - wh[..., 0:1] / 2,
                        ys - wh[..., 1:2] / 2,
                        xs + wh[..., 0:1] / 2,
                        ys + wh[..., 1:2] / 2], dim=2)
    detections = torch.cat([bboxes, scores, clses], dim=2)

    return detections


decode = torch.compile(ctdet_decode)


def make():
    torch.manual_seed(0)
    hm = torch.randn(1, 2, 6, 6).sigmoid_()
    wh = torch.rand(1, 2, 6, 6) * 4
    wh_cat = torch.rand(1, 4, 6, 6) * 4
    reg = torch.rand(1, 2, 6, 6)
    return ctdet_decode, [
        (hm, wh, reg, False, 5),
        (hm, wh, None, False, 5),
        (hm, wh_cat, reg, True, 5),
    ]
