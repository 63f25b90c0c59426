"""Simple Baselines pose validation step: flip test through NumPy (np.flip, flip_back, torch.from_numpy), shifted heatmap average, JointsMSELoss, `loss.item()` and the NumPy PCK accuracy.

Source: microsoft/human-pose-estimation.pytorch@15bbef29f37ec2aba840350e0c293161789f9b6d:lib/core/function.py:validate
Helpers: lib/core/loss.py (JointsMSELoss), lib/utils/transforms.py (flip_back),
lib/core/evaluate.py@51a58123 (calc_dists, dist_acc, accuracy), lib/core/inference.py@51a58123 (get_max_preds)
Kept: the per-batch body of validate() under torch.no_grad (the
config.TEST.FLIP_TEST branch with np.flip(...).copy(), flip_back swapping
matched parts, `config.TEST.SHIFT_HEATMAP` shift, the average), the
criterion, losses.update(loss.item(), num_images), accuracy(...) on
`.cpu().numpy()` heatmaps, acc.update; JointsMSELoss with its per-joint
split loop and use_target_weight; the NumPy helpers as written.
Simplified: `.cuda()` transfers dropped (CPU); the PoseResNet backbone is a
conv + deconv stand-in; meta/center/scale bookkeeping, get_final_preds and
logging are left out; the step returns (output, loss, avg_acc). 4 joints
with flip pairs (0, 1), (2, 3), one 16x16 input, 8x8 heatmaps.
"""
import types

import numpy as np
import torch
import torch.nn as nn


def get_max_preds(batch_heatmaps):
    '''
    get predictions from score maps
    heatmaps: numpy.ndarray([batch_size, num_joints, height, width])
    '''
    assert isinstance(batch_heatmaps, np.ndarray), \
        'batch_heatmaps should be numpy.ndarray'
    assert batch_heatmaps.ndim == 4, 'batch_images should be 4-ndim'

    batch_size = batch_heatmaps.shape[0]
    num_joints = batch_heatmaps.shape[1]
    width = batch_heatmaps.shape[3]
    heatmaps_reshaped = batch_heatmaps.reshape((batch_size, num_joints, -1))
    idx = np.argmax(heatmaps_reshaped, 2)
    maxvals = np.amax(heatmaps_reshaped, 2)

    maxvals = maxvals.reshape((batch_size, num_joints, 1))
    idx = idx.reshape((batch_size, num_joints, 1))

    preds = np.tile(idx, (1, 1, 2)).astype(np.float32)

    preds[:, :, 0] = (preds[:, :, 0]) % width
    preds[:, :, 1] = np.floor((preds[:, :, 1]) / width)

    pred_mask = np.tile(np.greater(maxvals, 0.0), (1, 1, 2))
    pred_mask = pred_mask.astype(np.float32)

    preds *= pred_mask
    return preds, maxvals


def calc_dists(preds, target, normalize):
    preds = preds.astype(np.float32)
    target = target.astype(np.float32)
    dists = np.zeros((preds.shape[1], preds.shape[0]))
    for n in range(preds.shape[0]):
        for c in range(preds.shape[1]):
            if target[n, c, 0] > 1 and target[n, c, 1] > 1:
                normed_preds = preds[n, c, :] / normalize[n]
                normed_targets = target[n, c, :] / normalize[n]
                dists[c, n] = np.linalg.norm(normed_preds - normed_targets)
            else:
                dists[c, n] = -1
    return dists


def dist_acc(dists, thr=0.5):
    ''' Return percentage below threshold while ignoring values with a -1 '''
    dist_cal = np.not_equal(dists, -1)
    num_dist_cal = dist_cal.sum()
    if num_dist_cal > 0:
        return np.less(dists[dist_cal], thr).sum() * 1.0 / num_dist_cal
    else:
        return -1


def accuracy(output, target, hm_type='gaussian', thr=0.5):
    idx = list(range(output.shape[1]))
    norm = 1.0
    if hm_type == 'gaussian':
        pred, _ = get_max_preds(output)
        target, _ = get_max_preds(target)
        h = output.shape[2]
        w = output.shape[3]
        norm = np.ones((pred.shape[0], 2)) * np.array([h, w]) / 10
    dists = calc_dists(pred, target, norm)

    acc = np.zeros((len(idx) + 1))
    avg_acc = 0
    cnt = 0

    for i in range(len(idx)):
        acc[i + 1] = dist_acc(dists[idx[i]])
        if acc[i + 1] >= 0:
            avg_acc = avg_acc + acc[i + 1]
            cnt += 1

    avg_acc = avg_acc / cnt if cnt != 0 else 0
    if cnt != 0:
        acc[0] = avg_acc
    return acc, avg_acc, cnt, pred


def flip_back(output_flipped, matched_parts):
    '''
    ouput_flipped: numpy.ndarray(batch_size, num_joints, height, width)
    '''
    assert output_flipped.ndim == 4, \
        'output_flipped should be [batch_size, num_joints, height, width]'

    output_flipped = output_flipped[:, :, :, ::-1]

    for pair in matched_parts:
        tmp = output_flipped[:, pair[0], :, :].copy()
        output_flipped[:, pair[0], :, :] = output_flipped[:, pair[1], :, :]
        output_flipped[:, pair[1], :, :] = tmp

    return output_flipped


class JointsMSELoss(nn.Module):
    def __init__(self, use_target_weight):
        super(JointsMSELoss, self).__init__()
        self.criterion = nn.MSELoss(reduction='mean')
        self.use_target_weight = use_target_weight

    def forward(self, output, target, target_weight):
        batch_size = output.size(0)
        num_joints = output.size(1)
        heatmaps_pred = output.reshape((batch_size, num_joints, -1)).split(1, 1)
        heatmaps_gt = target.reshape((batch_size, num_joints, -1)).split(1, 1)
        loss = 0

        for idx in range(num_joints):
            heatmap_pred = heatmaps_pred[idx].squeeze()
            heatmap_gt = heatmaps_gt[idx].squeeze()
            if self.use_target_weight:
                loss += 0.5 * self.criterion(
                    heatmap_pred.mul(target_weight[:, idx]),
                    heatmap_gt.mul(target_weight[:, idx])
                )
            else:
                loss += 0.5 * self.criterion(heatmap_pred, heatmap_gt)

        return loss / num_joints


class AverageMeter(object):
    """Computes and stores the average and current value"""

    def __init__(self):
        self.reset()

    def reset(self):
        self.val = 0
        self.avg = 0
        self.sum = 0
        self.count = 0

    def update(self, val, n=1):
        self.val = val
        self.sum += val * n
        self.count += n
        self.avg = self.sum / self.count if self.count != 0 else 0


class PoseNet(nn.Module):
    """Stand-in for PoseResNet: a strided conv trunk and a deconv heatmap head."""

    def __init__(self, num_joints=4):
        super().__init__()
        self.trunk = nn.Sequential(
            nn.Conv2d(3, 8, 3, 2, 1), nn.BatchNorm2d(8), nn.ReLU(inplace=True),
            nn.Conv2d(8, 8, 3, 2, 1), nn.BatchNorm2d(8), nn.ReLU(inplace=True))
        self.deconv = nn.Sequential(
            nn.ConvTranspose2d(8, 8, 4, 2, 1, bias=False), nn.BatchNorm2d(8), nn.ReLU(inplace=True))
        self.final_layer = nn.Conv2d(8, num_joints, 1)

    def forward(self, x):
        return self.final_layer(self.deconv(self.trunk(x)))


@torch.compile
def validate_batch(config, model, criterion, input, target, target_weight, flip_pairs, losses, acc):
    with torch.no_grad():
        # compute output
        output = model(input)
        if config.TEST.FLIP_TEST:
            # this part is ugly, because pytorch has not supported negative index
            # input_flipped = model(input[:, :, :, ::-1])
            input_flipped = np.flip(input.cpu().numpy(), 3).copy()
            input_flipped = torch.from_numpy(input_flipped)
            output_flipped = model(input_flipped)
            output_flipped = flip_back(output_flipped.cpu().numpy(),
                                       flip_pairs)
            output_flipped = torch.from_numpy(output_flipped.copy())

            # feature is not aligned, shift flipped heatmap for higher accuracy
            if config.TEST.SHIFT_HEATMAP:
                output_flipped[:, :, :, 1:] = \
                    output_flipped.clone()[:, :, :, 0:-1]

            output = (output + output_flipped) * 0.5

        loss = criterion(output, target, target_weight)

        num_images = input.size(0)
        # measure accuracy and record loss
        losses.update(loss.item(), num_images)
        _, avg_acc, cnt, pred = accuracy(output.cpu().numpy(),
                                         target.cpu().numpy())

        acc.update(avg_acc, cnt)
    return output, loss, avg_acc


def _config(flip_test):
    return types.SimpleNamespace(
        TEST=types.SimpleNamespace(FLIP_TEST=flip_test, SHIFT_HEATMAP=True),
        MODEL=types.SimpleNamespace(NUM_JOINTS=4))


def _gaussian_heatmaps(centers, size=8, sigma=1.0):
    ys = torch.arange(size, dtype=torch.float32).view(1, 1, size, 1)
    xs = torch.arange(size, dtype=torch.float32).view(1, 1, 1, size)
    cx = centers[..., 0].unsqueeze(-1).unsqueeze(-1)
    cy = centers[..., 1].unsqueeze(-1).unsqueeze(-1)
    return torch.exp(-((xs - cx) ** 2 + (ys - cy) ** 2) / (2 * sigma ** 2))


def make():
    torch.manual_seed(0)
    model = PoseNet(num_joints=4).eval()
    criterion = JointsMSELoss(use_target_weight=True)
    input = torch.randn(1, 3, 16, 16)
    # joint 1 sits on the border column: calc_dists takes its `-1` side
    centers = torch.tensor([[[2.0, 3.0], [0.0, 5.0], [3.0, 6.0], [6.0, 2.0]]])
    target = _gaussian_heatmaps(centers)
    target_weight = torch.ones(1, 4, 1)
    flip_pairs = [[0, 1], [2, 3]]
    return validate_batch._torchdynamo_orig_callable, [
        (_config(True), model, criterion, input, target, target_weight, flip_pairs, AverageMeter(), AverageMeter()),
        (_config(False), model, criterion, input, target, target_weight, flip_pairs, AverageMeter(), AverageMeter()),
    ]
