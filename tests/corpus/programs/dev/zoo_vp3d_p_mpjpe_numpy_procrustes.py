"""VideoPose3D evaluate() batch body: flip-TTA undo, MPJPE/N-MPJPE `.item()`, then numpy P-MPJPE (SVD Procrustes) and velocity error.

Source: facebookresearch/VideoPose3D@1afb1ca0f1237776518469876342fc8669d3f6a9:run.py:652-705
Also: common/loss.py (mpjpe, p_mpjpe, n_mpjpe, mean_velocity_error) at the same commit.
Kept: the per-batch body of evaluate(): model_pos on the 2D batch, the test-time-augmentation undo
(in-place sign flip, joints_left + joints_right list index swap, mean over dim 0), inputs_3d[:, :, 0] = 0,
error = mpjpe(...), n_mpjpe(...).item(), error.item(), `.cpu().numpy().reshape(...)` and the numpy
p_mpjpe (np.linalg.svd, det sign fix) and mean_velocity_error; the loss functions verbatim.
Simplified: the generator loop is left to the caller (torch.no_grad() and model_pos.eval() stay at the
top of the compiled batch function); 5 joints, one temporal model
layer (TemporalModel with filter widths [3, 3], 32 channels); the batch body is compiled as a function.
"""
import numpy as np
import torch
import torch.nn as nn


class TemporalModel(nn.Module):
    def __init__(self, num_joints_in, in_features, num_joints_out,
                 filter_widths, causal=False, dropout=0.25, channels=1024):
        super().__init__()
        self.num_joints_in = num_joints_in
        self.in_features = in_features
        self.num_joints_out = num_joints_out
        self.filter_widths = filter_widths
        self.drop = nn.Dropout(dropout)
        self.relu = nn.ReLU(inplace=True)
        self.pad = [filter_widths[0] // 2]
        self.expand_bn = nn.BatchNorm1d(channels, momentum=0.1)
        self.shrink = nn.Conv1d(channels, num_joints_out * 3, 1)
        self.expand_conv = nn.Conv1d(num_joints_in * in_features, channels, filter_widths[0], bias=False)

        layers_conv = []
        layers_bn = []

        self.causal_shift = [(filter_widths[0]) // 2 if causal else 0]
        next_dilation = filter_widths[0]
        for i in range(1, len(filter_widths)):
            self.pad.append((filter_widths[i] - 1) * next_dilation // 2)
            self.causal_shift.append((filter_widths[i] // 2 * next_dilation) if causal else 0)

            layers_conv.append(nn.Conv1d(channels, channels, filter_widths[i],
                                         dilation=next_dilation, bias=False))
            layers_bn.append(nn.BatchNorm1d(channels, momentum=0.1))
            layers_conv.append(nn.Conv1d(channels, channels, 1, dilation=1, bias=False))
            layers_bn.append(nn.BatchNorm1d(channels, momentum=0.1))

            next_dilation *= filter_widths[i]

        self.layers_conv = nn.ModuleList(layers_conv)
        self.layers_bn = nn.ModuleList(layers_bn)

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

    def _forward_blocks(self, x):
        x = self.drop(self.relu(self.expand_bn(self.expand_conv(x))))

        for i in range(len(self.pad) - 1):
            pad = self.pad[i + 1]
            shift = self.causal_shift[i + 1]
            res = x[:, :, pad + shift: x.shape[2] - pad + shift]

            x = self.drop(self.relu(self.layers_bn[2 * i](self.layers_conv[2 * i](x))))
            x = res + self.drop(self.relu(self.layers_bn[2 * i + 1](self.layers_conv[2 * i + 1](x))))

        x = self.shrink(x)
        return x


def mpjpe(predicted, target):
    """
    Mean per-joint position error (i.e. mean Euclidean distance),
    often referred to as "Protocol #1" in many papers.
    """
    assert predicted.shape == target.shape
    return torch.mean(torch.norm(predicted - target, dim=len(target.shape) - 1))


def p_mpjpe(predicted, target):
    """
    Pose error: MPJPE after rigid alignment (scale, rotation, and translation),
    often referred to as "Protocol #2" in many papers.
    """
    assert predicted.shape == target.shape

    muX = np.mean(target, axis=1, keepdims=True)
    muY = np.mean(predicted, axis=1, keepdims=True)

    X0 = target - muX
    Y0 = predicted - muY

    normX = np.sqrt(np.sum(X0 ** 2, axis=(1, 2), keepdims=True))
    normY = np.sqrt(np.sum(Y0 ** 2, axis=(1, 2), keepdims=True))

    X0 /= normX
    Y0 /= normY

    H = np.matmul(X0.transpose(0, 2, 1), Y0)
    U, s, Vt = np.linalg.svd(H)
    V = Vt.transpose(0, 2, 1)
    R = np.matmul(V, U.transpose(0, 2, 1))

    # Avoid improper rotations (reflections), i.e. rotations with det(R) = -1
    sign_detR = np.sign(np.expand_dims(np.linalg.det(R), axis=1))
    V[:, :, -1] *= sign_detR
    s[:, -1] *= sign_detR.flatten()
    R = np.matmul(V, U.transpose(0, 2, 1))  # Rotation

    tr = np.expand_dims(np.sum(s, axis=1, keepdims=True), axis=2)

    a = tr * normX / normY  # Scale
    t = muX - a * np.matmul(muY, R)  # Translation

    # Perform rigid transformation on the input
    predicted_aligned = a * np.matmul(predicted, R) + t

    # Return MPJPE
    return np.mean(np.linalg.norm(predicted_aligned - target, axis=len(target.shape) - 1))


def n_mpjpe(predicted, target):
    """
    Normalized MPJPE (scale only)
    """
    assert predicted.shape == target.shape

    norm_predicted = torch.mean(torch.sum(predicted ** 2, dim=3, keepdim=True), dim=2, keepdim=True)
    norm_target = torch.mean(torch.sum(target * predicted, dim=3, keepdim=True), dim=2, keepdim=True)
    scale = norm_target / norm_predicted
    return mpjpe(scale * predicted, target)


def mean_velocity_error(predicted, target):
    """
    Mean per-joint velocity error (i.e. mean Euclidean distance of the 1st derivative)
    """
    assert predicted.shape == target.shape

    velocity_predicted = np.diff(predicted, axis=0)
    velocity_target = np.diff(target, axis=0)

    return np.mean(np.linalg.norm(velocity_predicted - velocity_target, axis=len(target.shape) - 1))


joints_left, joints_right = [1, 2], [3, 4]
model_pos = TemporalModel(5, 2, 5, filter_widths=[3, 3], channels=32)


@torch.compile
def evaluate_batch(inputs_2d, inputs_3d, augment_enabled):
    with torch.no_grad():
        model_pos.eval()
        predicted_3d_pos = model_pos(inputs_2d)

        # Test-time augmentation (if enabled)
        if augment_enabled:
            # Undo flipping and take average with non-flipped version
            predicted_3d_pos[1, :, :, 0] *= -1
            predicted_3d_pos[1, :, joints_left + joints_right] = predicted_3d_pos[1, :, joints_right + joints_left]
            predicted_3d_pos = torch.mean(predicted_3d_pos, dim=0, keepdim=True)

        inputs_3d[:, :, 0] = 0
        if augment_enabled:
            inputs_3d = inputs_3d[:1]

        error = mpjpe(predicted_3d_pos, inputs_3d)
        loss_3d_pos_scale = inputs_3d.shape[0] * inputs_3d.shape[1] * n_mpjpe(predicted_3d_pos, inputs_3d).item()

        loss_3d_pos = inputs_3d.shape[0] * inputs_3d.shape[1] * error.item()
        N = inputs_3d.shape[0] * inputs_3d.shape[1]

        inputs = inputs_3d.cpu().numpy().reshape(-1, inputs_3d.shape[-2], inputs_3d.shape[-1])
        predicted_3d_pos = predicted_3d_pos.cpu().numpy().reshape(-1, inputs_3d.shape[-2], inputs_3d.shape[-1])

        loss_3d_pos_procrustes = inputs_3d.shape[0] * inputs_3d.shape[1] * p_mpjpe(predicted_3d_pos, inputs)

        # Compute velocity error
        loss_3d_vel = inputs_3d.shape[0] * inputs_3d.shape[1] * mean_velocity_error(predicted_3d_pos, inputs)
        return loss_3d_pos, loss_3d_pos_procrustes, loss_3d_pos_scale, loss_3d_vel, N


def make():
    global model_pos
    torch.manual_seed(0)
    model_pos = TemporalModel(5, 2, 5, filter_widths=[3, 3], channels=32)
    inputs_2d = torch.randn(1, 16, 5, 2)
    inputs_3d = torch.randn(1, 16 - 8, 5, 3)
    inputs_2d_aug = torch.randn(2, 16, 5, 2)
    return evaluate_batch._torchdynamo_orig_callable, [
        (inputs_2d, inputs_3d.clone(), False),
        (inputs_2d_aug, torch.cat([inputs_3d, inputs_3d]), True),
    ]
