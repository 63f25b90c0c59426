"""Depth Anything V2 metric-depth validation step: upsample the prediction to the GT size, build the valid mask, skip the sample when `valid_mask.sum() < 10`, then `eval_depth` on the masked pixels returning a dict of `.item()` floats.

Source: DepthAnything/Depth-Anything-V2@2cbc36a8ce2cec41d38ee51153f112e87c8e42d8:metric_depth/train.py:162-177
Also: metric_depth/util/metric.py:1-25 (eval_depth verbatim).
Kept: the body of the validation loop (no_grad forward, `F.interpolate(pred[:, None],
depth.shape[-2:], ...)[0, 0]`, the range mask, the `< 10` skip, eval_depth on
`pred[valid_mask]`, the `results[k] += cur_results[k]` accumulation) in a
`val_step` function; `continue` becomes `return results` (nothing accumulated).
Simplified: DepthAnythingV2 is a tiny conv net with the same `(B, H, W)`
sigmoid-times-max_depth output at half resolution; no cuda/dist.
"""
import torch
import torch.nn.functional as F
from torch import nn


def eval_depth(pred, target):
    assert pred.shape == target.shape

    thresh = torch.max((target / pred), (pred / target))

    d1 = torch.sum(thresh < 1.25).float() / len(thresh)
    d2 = torch.sum(thresh < 1.25 ** 2).float() / len(thresh)
    d3 = torch.sum(thresh < 1.25 ** 3).float() / len(thresh)

    diff = pred - target
    diff_log = torch.log(pred) - torch.log(target)

    abs_rel = torch.mean(torch.abs(diff) / target)
    sq_rel = torch.mean(torch.pow(diff, 2) / target)

    rmse = torch.sqrt(torch.mean(torch.pow(diff, 2)))
    rmse_log = torch.sqrt(torch.mean(torch.pow(diff_log, 2)))

    log10 = torch.mean(torch.abs(torch.log10(pred) - torch.log10(target)))
    silog = torch.sqrt(torch.pow(diff_log, 2).mean() - 0.5 * torch.pow(diff_log.mean(), 2))

    return {'d1': d1.item(), 'd2': d2.item(), 'd3': d3.item(), 'abs_rel': abs_rel.item(), 'sq_rel': sq_rel.item(),
            'rmse': rmse.item(), 'rmse_log': rmse_log.item(), 'log10': log10.item(), 'silog': silog.item()}


class TinyMetricDepth(nn.Module):
    def __init__(self, max_depth=20.0):
        super().__init__()
        self.max_depth = max_depth
        self.net = nn.Sequential(nn.Conv2d(3, 8, 3, stride=2, padding=1), nn.ReLU(True), nn.Conv2d(8, 1, 3, padding=1))

    def forward(self, x):
        depth = self.net(x).sigmoid() * self.max_depth
        return depth.squeeze(1)


class Args:
    min_depth = 0.001
    max_depth = 20


def val_step(model, sample, results, nsamples, args):
    img, depth, valid_mask = sample['image'].float(), sample['depth'][0], sample['valid_mask'][0]

    with torch.no_grad():
        pred = model(img)
        pred = F.interpolate(pred[:, None], depth.shape[-2:], mode='bilinear', align_corners=True)[0, 0]

    valid_mask = (valid_mask == 1) & (depth >= args.min_depth) & (depth <= args.max_depth)

    if valid_mask.sum() < 10:
        return results, nsamples

    cur_results = eval_depth(pred[valid_mask], depth[valid_mask])

    for k in results.keys():
        results[k] += cur_results[k]
    nsamples += 1
    return results, nsamples


compiled_val_step = torch.compile(val_step)


def make():
    torch.manual_seed(0)
    model = TinyMetricDepth(max_depth=Args.max_depth).eval()
    img = torch.randn(1, 3, 16, 16)
    depth = torch.rand(1, 16, 16) * 25.0 + 0.01
    good = {'image': img, 'depth': depth, 'valid_mask': torch.ones(1, 16, 16, dtype=torch.uint8)}
    empty = {'image': img, 'depth': depth, 'valid_mask': torch.zeros(1, 16, 16, dtype=torch.uint8)}

    def fresh():
        return {k: torch.tensor([0.0]) for k in ['d1', 'd2', 'd3', 'abs_rel', 'sq_rel', 'rmse', 'rmse_log', 'log10', 'silog']}

    return val_step, [(model, good, fresh(), torch.tensor([0.0]), Args()),
                      (model, empty, fresh(), torch.tensor([0.0]), Args())]
