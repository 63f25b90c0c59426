"""Monodepth2 Trainer.compute_depth_losses: validation depth metrics over the Garg/Eigen crop, read through a boolean mask (`depth_gt[mask]`), median scaling, and `np.array(...cpu())` per metric.

Source: nianticlabs/monodepth2@b676244e5a1ca55564eb5d16ab521a48f823af31:trainer.py:498-526
Also: layers.py:251-269 (compute_depth_errors).
Kept: compute_depth_losses verbatim (clamped interpolation of ("depth", 0, 0),
the zero mask multiplied by the crop mask, masked reads of gt and pred, median
ratio scaling, the losses dict filled through depth_metric_names with
np.array(depth_errors[i].cpu())); compute_depth_errors verbatim.
Simplified: the Trainer is reduced to the depth metric names and this method;
the KITTI resolution [375, 1242] and crop [153:371, 44:1197] are shrunk by 15
to [25, 83] and [10:25, 3:80].
"""
import numpy as np
import torch
import torch.nn.functional as F


def compute_depth_errors(gt, pred):
    """Computation of error metrics between predicted and ground truth depths
    """
    thresh = torch.max((gt / pred), (pred / gt))
    a1 = (thresh < 1.25     ).float().mean()
    a2 = (thresh < 1.25 ** 2).float().mean()
    a3 = (thresh < 1.25 ** 3).float().mean()

    rmse = (gt - pred) ** 2
    rmse = torch.sqrt(rmse.mean())

    rmse_log = (torch.log(gt) - torch.log(pred)) ** 2
    rmse_log = torch.sqrt(rmse_log.mean())

    abs_rel = torch.mean(torch.abs(gt - pred) / gt)

    sq_rel = torch.mean((gt - pred) ** 2 / gt)

    return abs_rel, sq_rel, rmse, rmse_log, a1, a2, a3


class Trainer:
    def __init__(self):
        self.depth_metric_names = [
            "de/abs_rel", "de/sq_rel", "de/rms", "de/log_rms", "da/a1", "da/a2", "da/a3"]

    def compute_depth_losses(self, inputs, outputs, losses):
        """Compute depth metrics, to allow monitoring during training

        This isn't particularly accurate as it averages over the entire batch,
        so is only used to give an indication of validation performance
        """
        depth_pred = outputs[("depth", 0, 0)]
        depth_pred = torch.clamp(F.interpolate(
            depth_pred, [25, 83], mode="bilinear", align_corners=False), 1e-3, 80)
        depth_pred = depth_pred.detach()

        depth_gt = inputs["depth_gt"]
        mask = depth_gt > 0

        # garg/eigen crop
        crop_mask = torch.zeros_like(mask)
        crop_mask[:, :, 10:25, 3:80] = 1
        mask = mask * crop_mask

        depth_gt = depth_gt[mask]
        depth_pred = depth_pred[mask]
        depth_pred *= torch.median(depth_gt) / torch.median(depth_pred)

        depth_pred = torch.clamp(depth_pred, min=1e-3, max=80)

        depth_errors = compute_depth_errors(depth_gt, depth_pred)

        for i, metric in enumerate(self.depth_metric_names):
            losses[metric] = np.array(depth_errors[i].cpu())


trainer = Trainer()
compute_depth_losses = torch.compile(trainer.compute_depth_losses)


def make():
    torch.manual_seed(0)
    outputs = {("depth", 0, 0): torch.rand(2, 1, 12, 40) * 50 + 1}
    depth_gt = torch.rand(2, 1, 25, 83) * 60
    depth_gt[depth_gt < 20] = 0
    return Trainer().compute_depth_losses, [({"depth_gt": depth_gt}, outputs, {})]
