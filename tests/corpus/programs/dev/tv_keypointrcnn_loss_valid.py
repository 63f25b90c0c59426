"""torchvision keypointrcnn_loss: H != W ValueError, `torch.where(valid)[0]`, `if numel() == 0 or len(valid) == 0` early return.

Source: pytorch/vision@v0.29.2:torchvision/models/detection/roi_heads.py:310-338
Kept: keypointrcnn_loss verbatim (the heatmap loop over images, cat, the
valid where, the numel/len early return, cross entropy on valid rows);
keypoints_to_heatmap is simplified from the same file.
Simplified: heatmap targets are the floor of scaled coordinates; 2 keypoints, 4x4 maps.
"""
import torch
import torch.nn.functional as F


def keypoints_to_heatmap(keypoints, rois, heatmap_size):
    offset_x = rois[:, 0]
    offset_y = rois[:, 1]
    scale_x = heatmap_size / (rois[:, 2] - rois[:, 0])
    scale_y = heatmap_size / (rois[:, 3] - rois[:, 1])
    x = ((keypoints[..., 0] - offset_x[:, None]) * scale_x[:, None]).floor().long().clamp(0, heatmap_size - 1)
    y = ((keypoints[..., 1] - offset_y[:, None]) * scale_y[:, None]).floor().long().clamp(0, heatmap_size - 1)
    valid = keypoints[..., 2] > 0
    lin_ind = y * heatmap_size + x
    heatmaps = lin_ind * valid
    return heatmaps, valid


def keypointrcnn_loss(keypoint_logits, proposals, gt_keypoints, keypoint_matched_idxs):
    N, K, H, W = keypoint_logits.shape
    if H != W:
        raise ValueError(f"keypoint_logits height and width (last two elements of shape) should be equal. Instead got H = {H} and W = {W}")
    discretization_size = H
    heatmaps = []
    valid = []
    for proposals_per_image, gt_kp_in_image, midx in zip(proposals, gt_keypoints, keypoint_matched_idxs):
        kp = gt_kp_in_image[midx]
        heatmaps_per_image, valid_per_image = keypoints_to_heatmap(kp, proposals_per_image, discretization_size)
        heatmaps.append(heatmaps_per_image.view(-1))
        valid.append(valid_per_image.view(-1))
    keypoint_targets = torch.cat(heatmaps, dim=0)
    valid = torch.cat(valid, dim=0).to(dtype=torch.uint8)
    valid = torch.where(valid)[0]
    if keypoint_targets.numel() == 0 or len(valid) == 0:
        return keypoint_logits.sum() * 0
    keypoint_logits = keypoint_logits.view(N * K, H * W)
    keypoint_loss = F.cross_entropy(keypoint_logits[valid], keypoint_targets[valid])
    return keypoint_loss


@torch.compile
def keypoint_head_loss(keypoint_logits, proposals, gt_keypoints, matched):
    return keypointrcnn_loss(keypoint_logits, proposals, gt_keypoints, matched)


def make():
    torch.manual_seed(0)
    proposals = [torch.tensor([[0.0, 0.0, 8.0, 8.0]]), torch.tensor([[1.0, 1.0, 5.0, 5.0]])]
    gt = [torch.tensor([[[1.0, 2.0, 1.0], [3.0, 3.0, 0.0]]]), torch.tensor([[[2.0, 2.0, 1.0], [4.0, 4.0, 1.0]]])]
    unlabeled = [torch.zeros(1, 2, 3), torch.zeros(1, 2, 3)]
    matched = [torch.tensor([0]), torch.tensor([0])]
    logits = torch.randn(2, 2, 4, 4)
    return keypoint_head_loss._torchdynamo_orig_callable, [(logits, proposals, gt, matched), (logits, proposals, unlabeled, matched)]
