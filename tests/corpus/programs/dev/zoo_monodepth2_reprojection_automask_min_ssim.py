"""Monodepth2 Trainer.compute_losses: per-scale reprojection losses (SSIM + L1), auto-masking with identity reprojection plus tie-breaking noise, per-pixel min over sources, and edge-aware smoothness, all driven by an `opt` namespace.

Source: nianticlabs/monodepth2@b676244e5a1ca55564eb5d16ab521a48f823af31:trainer.py:410-496
Also: layers.py:212-249 (get_smooth_loss, SSIM).
Kept: compute_reprojection_loss and compute_losses verbatim (the v1_multiscale
source scale, identity losses, avg_reprojection, `torch.randn(shape,
device=self.device) * 0.00001`, `torch.min(combined, dim=1)`, the
identity_selection output keyed by a formatted string, the smoothness term
divided by 2 ** scale); SSIM and get_smooth_loss verbatim.
Simplified: the networks that fill `outputs` are not part of the program (the
warped colors and disparities arrive as inputs); the predictive-mask branch
(it calls `.cuda()`) is dropped; 2 scales, 2 source frames, 8x12 images.
"""
import argparse

import torch
import torch.nn as nn


def get_smooth_loss(disp, img):
    """Computes the smoothness loss for a disparity image
    The color image is used for edge-aware smoothness
    """
    grad_disp_x = torch.abs(disp[:, :, :, :-1] - disp[:, :, :, 1:])
    grad_disp_y = torch.abs(disp[:, :, :-1, :] - disp[:, :, 1:, :])

    grad_img_x = torch.mean(torch.abs(img[:, :, :, :-1] - img[:, :, :, 1:]), 1, keepdim=True)
    grad_img_y = torch.mean(torch.abs(img[:, :, :-1, :] - img[:, :, 1:, :]), 1, keepdim=True)

    grad_disp_x *= torch.exp(-grad_img_x)
    grad_disp_y *= torch.exp(-grad_img_y)

    return grad_disp_x.mean() + grad_disp_y.mean()


class SSIM(nn.Module):
    """Layer to compute the SSIM loss between a pair of images
    """
    def __init__(self):
        super(SSIM, self).__init__()
        self.mu_x_pool   = nn.AvgPool2d(3, 1)
        self.mu_y_pool   = nn.AvgPool2d(3, 1)
        self.sig_x_pool  = nn.AvgPool2d(3, 1)
        self.sig_y_pool  = nn.AvgPool2d(3, 1)
        self.sig_xy_pool = nn.AvgPool2d(3, 1)

        self.refl = nn.ReflectionPad2d(1)

        self.C1 = 0.01 ** 2
        self.C2 = 0.03 ** 2

    def forward(self, x, y):
        x = self.refl(x)
        y = self.refl(y)

        mu_x = self.mu_x_pool(x)
        mu_y = self.mu_y_pool(y)

        sigma_x  = self.sig_x_pool(x ** 2) - mu_x ** 2
        sigma_y  = self.sig_y_pool(y ** 2) - mu_y ** 2
        sigma_xy = self.sig_xy_pool(x * y) - mu_x * mu_y

        SSIM_n = (2 * mu_x * mu_y + self.C1) * (2 * sigma_xy + self.C2)
        SSIM_d = (mu_x ** 2 + mu_y ** 2 + self.C1) * (sigma_x + sigma_y + self.C2)

        return torch.clamp((1 - SSIM_n / SSIM_d) / 2, 0, 1)


class LossModule(nn.Module):
    """The part of monodepth2's Trainer that computes the training losses."""

    def __init__(self, opt):
        super().__init__()
        self.opt = opt
        self.device = torch.device("cpu")
        self.num_scales = len(self.opt.scales)
        if not self.opt.no_ssim:
            self.ssim = SSIM()

    def compute_reprojection_loss(self, pred, target):
        """Computes reprojection loss between a batch of predicted and target images
        """
        abs_diff = torch.abs(target - pred)
        l1_loss = abs_diff.mean(1, True)

        if self.opt.no_ssim:
            reprojection_loss = l1_loss
        else:
            ssim_loss = self.ssim(pred, target).mean(1, True)
            reprojection_loss = 0.85 * ssim_loss + 0.15 * l1_loss

        return reprojection_loss

    def forward(self, inputs, outputs):
        return self.compute_losses(inputs, outputs)

    def compute_losses(self, inputs, outputs):
        """Compute the reprojection and smoothness losses for a minibatch
        """
        losses = {}
        total_loss = 0

        for scale in self.opt.scales:
            loss = 0
            reprojection_losses = []

            if self.opt.v1_multiscale:
                source_scale = scale
            else:
                source_scale = 0

            disp = outputs[("disp", scale)]
            color = inputs[("color", 0, scale)]
            target = inputs[("color", 0, source_scale)]

            for frame_id in self.opt.frame_ids[1:]:
                pred = outputs[("color", frame_id, scale)]
                reprojection_losses.append(self.compute_reprojection_loss(pred, target))

            reprojection_losses = torch.cat(reprojection_losses, 1)

            if not self.opt.disable_automasking:
                identity_reprojection_losses = []
                for frame_id in self.opt.frame_ids[1:]:
                    pred = inputs[("color", frame_id, source_scale)]
                    identity_reprojection_losses.append(
                        self.compute_reprojection_loss(pred, target))

                identity_reprojection_losses = torch.cat(identity_reprojection_losses, 1)

                if self.opt.avg_reprojection:
                    identity_reprojection_loss = identity_reprojection_losses.mean(1, keepdim=True)
                else:
                    # save both images, and do min all at once below
                    identity_reprojection_loss = identity_reprojection_losses

            if self.opt.avg_reprojection:
                reprojection_loss = reprojection_losses.mean(1, keepdim=True)
            else:
                reprojection_loss = reprojection_losses

            if not self.opt.disable_automasking:
                # add random numbers to break ties
                identity_reprojection_loss += torch.randn(
                    identity_reprojection_loss.shape, device=self.device) * 0.00001

                combined = torch.cat((identity_reprojection_loss, reprojection_loss), dim=1)
            else:
                combined = reprojection_loss

            if combined.shape[1] == 1:
                to_optimise = combined
            else:
                to_optimise, idxs = torch.min(combined, dim=1)

            if not self.opt.disable_automasking:
                outputs["identity_selection/{}".format(scale)] = (
                    idxs > identity_reprojection_loss.shape[1] - 1).float()

            loss += to_optimise.mean()

            mean_disp = disp.mean(2, True).mean(3, True)
            norm_disp = disp / (mean_disp + 1e-7)
            smooth_loss = get_smooth_loss(norm_disp, color)

            loss += self.opt.disparity_smoothness * smooth_loss / (2 ** scale)
            total_loss += loss
            losses["loss/{}".format(scale)] = loss

        total_loss /= self.num_scales
        losses["loss"] = total_loss
        return losses


def parse_opt(args=()):
    parser = argparse.ArgumentParser()
    parser.add_argument("--scales", nargs="+", type=int, default=[0, 1])
    parser.add_argument("--frame_ids", nargs="+", type=int, default=[0, -1, 1])
    parser.add_argument("--disparity_smoothness", type=float, default=1e-3)
    parser.add_argument("--v1_multiscale", action="store_true")
    parser.add_argument("--avg_reprojection", action="store_true")
    parser.add_argument("--disable_automasking", action="store_true")
    parser.add_argument("--no_ssim", action="store_true")
    return parser.parse_args(list(args))


def train(opt):
    criterion = torch.compile(LossModule(opt))
    return criterion


def _batch(opt):
    inputs, outputs = {}, {}
    for scale in opt.scales:
        h, w = 8 // 2 ** scale, 12 // 2 ** scale
        for frame_id in opt.frame_ids:
            inputs[("color", frame_id, scale)] = torch.rand(2, 3, h, w)
            if frame_id != 0:
                # generate_images_pred warps at full resolution for every scale
                outputs[("color", frame_id, scale)] = torch.rand(2, 3, 8, 12)
        outputs[("disp", scale)] = torch.rand(2, 1, h, w)
    return inputs, outputs


def make():
    torch.manual_seed(0)
    opt = parse_opt()
    inputs, outputs = _batch(opt)
    return LossModule(opt), [(inputs, outputs), (inputs, dict(outputs))]
