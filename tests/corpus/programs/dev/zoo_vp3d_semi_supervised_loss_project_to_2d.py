"""VideoPose3D semi-supervised training step: strided temporal model, trajectory model, 2D reprojection, bone-length term, `.item()` bookkeeping.

Source: facebookresearch/VideoPose3D@1afb1ca0f1237776518469876342fc8669d3f6a9:run.py:330-395
Also: common/model.py (TemporalModelBase, TemporalModelOptimized1f), common/loss.py (mpjpe,
weighted_mpjpe), common/camera.py:37-90 (project_to_2d, project_to_2d_linear), at the same commit.
Kept: the semi-supervised batch body: inputs_traj clone, inputs_3d[:, :, 0] = 0, torch.cat of labeled
and unlabeled 2D, mpjpe / weighted_mpjpe with w = 1 / depth, `loss.item()` epoch accumulations, the
shape-product assert, `if pad > 0` target slicing, args-selected projection function, `args.no_proj`,
`args.bone_length_term` with dataset.skeleton().parents()[1:] (a numpy array) as an index; the model's
shape asserts and strided blocks.
Simplified: 5 joints, 64 channels, filter widths [3, 3]; optimizer.zero_grad/backward/step and the
generator loop are left to the caller; the step is a function compiled with torch.compile.
"""
import argparse

import numpy as np
import torch
import torch.nn as nn


class TemporalModelBase(nn.Module):
    def __init__(self, num_joints_in, in_features, num_joints_out,
                 filter_widths, causal, dropout, channels):
        super().__init__()

        # Validate input
        for fw in filter_widths:
            assert fw % 2 != 0, 'Only odd filter widths are supported'

        self.num_joints_in = num_joints_in
        self.in_features = in_features
        self.num_joints_out = num_joints_out
        self.filter_widths = filter_widths

        self.drop = nn.Dropout(dropout)
        self.relu = nn.ReLU(inplace=True)

        self.pad = [filter_widths[0] // 2]
        self.expand_bn = nn.BatchNorm1d(channels, momentum=0.1)
        self.shrink = nn.Conv1d(channels, num_joints_out * 3, 1)

    def receptive_field(self):
        frames = 0
        for f in self.pad:
            frames += f
        return 1 + 2 * frames

    def forward(self, x):
        assert len(x.shape) == 4
        assert x.shape[-2] == self.num_joints_in
        assert x.shape[-1] == self.in_features

        sz = x.shape[:3]
        x = x.view(x.shape[0], x.shape[1], -1)
        x = x.permute(0, 2, 1)

        x = self._forward_blocks(x)

        x = x.permute(0, 2, 1)
        x = x.view(sz[0], -1, self.num_joints_out, 3)

        return x


class TemporalModelOptimized1f(TemporalModelBase):
    def __init__(self, num_joints_in, in_features, num_joints_out,
                 filter_widths, causal=False, dropout=0.25, channels=1024):
        super().__init__(num_joints_in, in_features, num_joints_out, filter_widths, causal, dropout, channels)

        self.expand_conv = nn.Conv1d(num_joints_in * in_features, channels, filter_widths[0], stride=filter_widths[0], bias=False)

        layers_conv = []
        layers_bn = []

        self.causal_shift = [(filter_widths[0] // 2) if causal else 0]
        next_dilation = filter_widths[0]
        for i in range(1, len(filter_widths)):
            self.pad.append((filter_widths[i] - 1) * next_dilation // 2)
            self.causal_shift.append((filter_widths[i] // 2) if causal else 0)

            layers_conv.append(nn.Conv1d(channels, channels, filter_widths[i], stride=filter_widths[i], bias=False))
            layers_bn.append(nn.BatchNorm1d(channels, momentum=0.1))
            layers_conv.append(nn.Conv1d(channels, channels, 1, dilation=1, bias=False))
            layers_bn.append(nn.BatchNorm1d(channels, momentum=0.1))
            next_dilation *= filter_widths[i]

        self.layers_conv = nn.ModuleList(layers_conv)
        self.layers_bn = nn.ModuleList(layers_bn)

    def _forward_blocks(self, x):
        x = self.drop(self.relu(self.expand_bn(self.expand_conv(x))))

        for i in range(len(self.pad) - 1):
            res = x[:, :, self.causal_shift[i + 1] + self.filter_widths[i + 1] // 2:: self.filter_widths[i + 1]]

            x = self.drop(self.relu(self.layers_bn[2 * i](self.layers_conv[2 * i](x))))
            x = res + self.drop(self.relu(self.layers_bn[2 * i + 1](self.layers_conv[2 * i + 1](x))))

        x = self.shrink(x)
        return x


def mpjpe(predicted, target):
    assert predicted.shape == target.shape
    return torch.mean(torch.norm(predicted - target, dim=len(target.shape) - 1))


def weighted_mpjpe(predicted, target, w):
    assert predicted.shape == target.shape
    assert w.shape[0] == predicted.shape[0]
    return torch.mean(w * torch.norm(predicted - target, dim=len(target.shape) - 1))


def project_to_2d(X, camera_params):
    assert X.shape[-1] == 3
    assert len(camera_params.shape) == 2
    assert camera_params.shape[-1] == 9
    assert X.shape[0] == camera_params.shape[0]

    while len(camera_params.shape) < len(X.shape):
        camera_params = camera_params.unsqueeze(1)

    f = camera_params[..., :2]
    c = camera_params[..., 2:4]
    k = camera_params[..., 4:7]
    p = camera_params[..., 7:]

    XX = torch.clamp(X[..., :2] / X[..., 2:], min=-1, max=1)
    r2 = torch.sum(XX[..., :2] ** 2, dim=len(XX.shape) - 1, keepdim=True)

    radial = 1 + torch.sum(k * torch.cat((r2, r2 ** 2, r2 ** 3), dim=len(r2.shape) - 1), dim=len(r2.shape) - 1, keepdim=True)
    tan = torch.sum(p * XX, dim=len(XX.shape) - 1, keepdim=True)

    XXX = XX * (radial + tan) + p * r2

    return f * XXX + c


def project_to_2d_linear(X, camera_params):
    assert X.shape[-1] == 3
    assert len(camera_params.shape) == 2
    assert camera_params.shape[-1] == 9
    assert X.shape[0] == camera_params.shape[0]

    while len(camera_params.shape) < len(X.shape):
        camera_params = camera_params.unsqueeze(1)

    f = camera_params[..., :2]
    c = camera_params[..., 2:4]

    XX = torch.clamp(X[..., :2] / X[..., 2:], min=-1, max=1)

    return f * XX + c


class Skeleton:
    def __init__(self, parents):
        self._parents = np.array(parents)

    def parents(self):
        return self._parents


class Dataset:
    def __init__(self):
        self._skeleton = Skeleton([-1, 0, 1, 0, 3])

    def skeleton(self):
        return self._skeleton


args = argparse.Namespace(linear_projection=False, no_proj=False, bone_length_term=True)
dataset = Dataset()
filter_widths = [3, 3]
model_pos_train = TemporalModelOptimized1f(5, 2, 5, filter_widths=filter_widths, causal=False, dropout=0.25, channels=64)
model_traj_train = TemporalModelOptimized1f(5, 2, 1, filter_widths=filter_widths, causal=False, dropout=0.25, channels=64)
receptive_field = model_pos_train.receptive_field()
pad = (receptive_field - 1) // 2  # Padding on each side


def semi_supervised_step(inputs_3d, inputs_2d, inputs_2d_semi, cam_semi, skip):
    epoch_loss_3d_train = 0
    epoch_loss_traj_train = 0
    epoch_loss_2d_train_unlabeled = 0
    N = 0
    N_semi = 0

    inputs_traj = inputs_3d[:, :, :1].clone()
    inputs_3d[:, :, 0] = 0

    # Split point between labeled and unlabeled samples in the batch
    split_idx = inputs_3d.shape[0]

    inputs_2d_cat = torch.cat((inputs_2d, inputs_2d_semi), dim=0) if not skip else inputs_2d

    # Compute 3D poses
    predicted_3d_pos_cat = model_pos_train(inputs_2d_cat)

    loss_3d_pos = mpjpe(predicted_3d_pos_cat[:split_idx], inputs_3d)
    epoch_loss_3d_train += inputs_3d.shape[0] * inputs_3d.shape[1] * loss_3d_pos.item()
    N += inputs_3d.shape[0] * inputs_3d.shape[1]
    loss_total = loss_3d_pos

    # Compute global trajectory
    predicted_traj_cat = model_traj_train(inputs_2d_cat)
    w = 1 / inputs_traj[:, :, :, 2]  # Weight inversely proportional to depth
    loss_traj = weighted_mpjpe(predicted_traj_cat[:split_idx], inputs_traj, w)
    epoch_loss_traj_train += inputs_3d.shape[0] * inputs_3d.shape[1] * loss_traj.item()
    assert inputs_traj.shape[0] * inputs_traj.shape[1] == inputs_3d.shape[0] * inputs_3d.shape[1]
    loss_total += loss_traj

    if not skip:
        # Semi-supervised loss for unlabeled samples
        predicted_semi = predicted_3d_pos_cat[split_idx:]
        if pad > 0:
            target_semi = inputs_2d_semi[:, pad:-pad, :, :2].contiguous()
        else:
            target_semi = inputs_2d_semi[:, :, :, :2].contiguous()

        projection_func = project_to_2d_linear if args.linear_projection else project_to_2d
        reconstruction_semi = projection_func(predicted_semi + predicted_traj_cat[split_idx:], cam_semi)

        loss_reconstruction = mpjpe(reconstruction_semi, target_semi)  # On 2D poses
        epoch_loss_2d_train_unlabeled += predicted_semi.shape[0] * predicted_semi.shape[1] * loss_reconstruction.item()
        if not args.no_proj:
            loss_total += loss_reconstruction

        # Bone length term to enforce kinematic constraints
        if args.bone_length_term:
            dists = predicted_3d_pos_cat[:, :, 1:] - predicted_3d_pos_cat[:, :, dataset.skeleton().parents()[1:]]
            bone_lengths = torch.mean(torch.norm(dists, dim=3), dim=1)
            penalty = torch.mean(torch.abs(torch.mean(bone_lengths[:split_idx], dim=0)
                                           - torch.mean(bone_lengths[split_idx:], dim=0)))
            loss_total += penalty

        N_semi += predicted_semi.shape[0] * predicted_semi.shape[1]
    else:
        N_semi += 1  # To avoid division by zero

    return loss_total, epoch_loss_3d_train / N, epoch_loss_traj_train / N, epoch_loss_2d_train_unlabeled / N_semi


train_step = torch.compile(semi_supervised_step)


def make():
    torch.manual_seed(0)
    global model_pos_train, model_traj_train
    model_pos_train = TemporalModelOptimized1f(5, 2, 5, filter_widths=filter_widths, causal=False, dropout=0.25, channels=64)
    model_traj_train = TemporalModelOptimized1f(5, 2, 1, filter_widths=filter_widths, causal=False, dropout=0.25, channels=64)
    inputs_3d = torch.randn(3, 1, 5, 3)
    inputs_3d[..., 2] = inputs_3d[..., 2].abs() + 4.0
    inputs_2d = torch.randn(3, receptive_field, 5, 2)
    inputs_2d_semi = torch.randn(2, receptive_field, 5, 2)
    cam_semi = torch.randn(2, 9) * 0.1
    cam_semi[:, :2] += 1.0
    return semi_supervised_step, [(inputs_3d.clone(), inputs_2d, inputs_2d_semi, cam_semi, False),
                                  (inputs_3d.clone(), inputs_2d, inputs_2d_semi, cam_semi, True)]
