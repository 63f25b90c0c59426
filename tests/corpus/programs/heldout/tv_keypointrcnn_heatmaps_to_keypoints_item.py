"""torchvision keypoint R-CNN inference: `heatmaps_to_keypoints` loops over RoIs and sizes each bicubic upsample with `int(widths_ceil[i].item())`.

Source: pytorch/vision@v0.29.1:torchvision/models/detection/roi_heads.py:237-307,341-354
Kept: heatmaps_to_keypoints verbatim (the tracing branch check, the per-RoI
item() sizes, interpolate, argmax decode, floor division) and
keypointrcnn_inference splitting per image.
Simplified: the ONNX tracing loop is not included (torch.jit.is_tracing() is
False here, as in eager and compile); 2 keypoints, 4x4 heatmaps.
"""
import torch
import torch.nn.functional as F
from torch import nn


def heatmaps_to_keypoints(maps, rois):
    offset_x = rois[:, 0]
    offset_y = rois[:, 1]

    widths = rois[:, 2] - rois[:, 0]
    heights = rois[:, 3] - rois[:, 1]
    widths = widths.clamp(min=1)
    heights = heights.clamp(min=1)
    widths_ceil = widths.ceil()
    heights_ceil = heights.ceil()

    num_keypoints = maps.shape[1]

    if torch.jit.is_tracing():
        raise NotImplementedError("_onnx_heatmaps_to_keypoints_loop")

    xy_preds = torch.zeros((len(rois), 3, num_keypoints), dtype=torch.float32, device=maps.device)
    end_scores = torch.zeros((len(rois), num_keypoints), dtype=torch.float32, device=maps.device)
    for i in range(len(rois)):
        roi_map_width = int(widths_ceil[i].item())
        roi_map_height = int(heights_ceil[i].item())
        width_correction = widths[i] / roi_map_width
        height_correction = heights[i] / roi_map_height
        roi_map = F.interpolate(
            maps[i][:, None], size=(roi_map_height, roi_map_width), mode="bicubic", align_corners=False
        )[:, 0]
        w = roi_map.shape[2]
        pos = roi_map.reshape(num_keypoints, -1).argmax(dim=1)

        x_int = pos % w
        y_int = torch.div(pos - x_int, w, rounding_mode="floor")
        x = (x_int.float() + 0.5) * width_correction
        y = (y_int.float() + 0.5) * height_correction
        xy_preds[i, 0, :] = x + offset_x[i]
        xy_preds[i, 1, :] = y + offset_y[i]
        xy_preds[i, 2, :] = 1
        end_scores[i, :] = roi_map[torch.arange(num_keypoints, device=roi_map.device), y_int, x_int]

    return xy_preds.permute(0, 2, 1), end_scores


def keypointrcnn_inference(x, boxes):
    kp_probs = []
    kp_scores = []

    boxes_per_image = [box.size(0) for box in boxes]
    x2 = x.split(boxes_per_image, dim=0)

    for xx, bb in zip(x2, boxes):
        kp_prob, scores = heatmaps_to_keypoints(xx, bb)
        kp_probs.append(kp_prob)
        kp_scores.append(scores)

    return kp_probs, kp_scores


class KeypointPostProcess(nn.Module):
    def __init__(self):
        super().__init__()
        self.keypoint_predictor = nn.Conv2d(4, 2, 1)

    def forward(self, keypoint_features, boxes):
        keypoint_logits = self.keypoint_predictor(keypoint_features)
        return keypointrcnn_inference(keypoint_logits, boxes)


postprocess = torch.compile(KeypointPostProcess().eval(), dynamic=True)


def make():
    torch.manual_seed(0)
    boxes = [torch.tensor([[0.0, 0.0, 6.5, 5.0], [2.0, 1.0, 5.0, 9.0]]), torch.tensor([[1.0, 1.0, 4.0, 3.5]])]
    return KeypointPostProcess().eval(), [(torch.randn(3, 4, 4, 4), boxes)]
