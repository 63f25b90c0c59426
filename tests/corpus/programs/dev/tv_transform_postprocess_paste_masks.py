"""torchvision GeneralizedRCNNTransform.postprocess: resize_boxes, then paste_masks_in_image with `int(box[2] - box[0] + 1)` and tensor slice bounds per mask.

Source: pytorch/vision@v0.29.1:torchvision/models/detection/transform.py:257-277,288-322; torchvision/models/detection/roi_heads.py:378-438,486-502
Kept: postprocess (the `self.training` early return, the per-image loop over
result/image_shapes/original_image_sizes, the "masks" and "keypoints" key
checks), resize_boxes and resize_keypoints (ratios from torch.tensor sizes),
expand_boxes, expand_masks (the float scale), paste_mask_in_image (int() of
tensor box sides, interpolate to that size, builtin max/min on tensor
coordinates, slicing by them) and paste_masks_in_image (the list of pasted
masks, the empty `new_empty` case).
Simplified: the ONNX/tracing branches are left out; 28x28 masks become 4x4,
images are 12x16.
"""
import torch
import torch.nn.functional as F
from torch import Tensor, nn


def resize_keypoints(keypoints: Tensor, original_size: list, new_size: list) -> Tensor:
    ratios = [
        torch.tensor(s, dtype=torch.float32, device=keypoints.device)
        / torch.tensor(s_orig, dtype=torch.float32, device=keypoints.device)
        for s, s_orig in zip(new_size, original_size)
    ]
    ratio_h, ratio_w = ratios
    resized_data = keypoints.clone()
    resized_data[..., 0] *= ratio_w
    resized_data[..., 1] *= ratio_h
    return resized_data


def resize_boxes(boxes: Tensor, original_size: list, new_size: list) -> Tensor:
    ratios = [
        torch.tensor(s, dtype=torch.float32, device=boxes.device)
        / torch.tensor(s_orig, dtype=torch.float32, device=boxes.device)
        for s, s_orig in zip(new_size, original_size)
    ]
    ratio_height, ratio_width = ratios
    xmin, ymin, xmax, ymax = boxes.unbind(1)

    xmin = xmin * ratio_width
    xmax = xmax * ratio_width
    ymin = ymin * ratio_height
    ymax = ymax * ratio_height
    return torch.stack((xmin, ymin, xmax, ymax), dim=1)


def expand_boxes(boxes, scale):
    w_half = (boxes[:, 2] - boxes[:, 0]) * 0.5
    h_half = (boxes[:, 3] - boxes[:, 1]) * 0.5
    x_c = (boxes[:, 2] + boxes[:, 0]) * 0.5
    y_c = (boxes[:, 3] + boxes[:, 1]) * 0.5

    w_half *= scale
    h_half *= scale

    boxes_exp = torch.zeros_like(boxes)
    boxes_exp[:, 0] = x_c - w_half
    boxes_exp[:, 2] = x_c + w_half
    boxes_exp[:, 1] = y_c - h_half
    boxes_exp[:, 3] = y_c + h_half
    return boxes_exp


def expand_masks(mask, padding):
    M = mask.shape[-1]
    scale = float(M + 2 * padding) / M
    padded_mask = F.pad(mask, (padding,) * 4)
    return padded_mask, scale


def paste_mask_in_image(mask, box, im_h, im_w):
    TO_REMOVE = 1
    w = int(box[2] - box[0] + TO_REMOVE)
    h = int(box[3] - box[1] + TO_REMOVE)
    w = max(w, 1)
    h = max(h, 1)

    # Set shape to [batchxCxHxW]
    mask = mask.expand((1, 1, -1, -1))

    # Resize mask
    mask = F.interpolate(mask, size=(h, w), mode="bilinear", align_corners=False)
    mask = mask[0][0]

    im_mask = torch.zeros((im_h, im_w), dtype=mask.dtype, device=mask.device)
    x_0 = max(box[0], 0)
    x_1 = min(box[2] + 1, im_w)
    y_0 = max(box[1], 0)
    y_1 = min(box[3] + 1, im_h)

    im_mask[y_0:y_1, x_0:x_1] = mask[(y_0 - box[1]) : (y_1 - box[1]), (x_0 - box[0]) : (x_1 - box[0])]
    return im_mask


def paste_masks_in_image(masks, boxes, img_shape, padding=1):
    masks, scale = expand_masks(masks, padding=padding)
    boxes = expand_boxes(boxes, scale).to(dtype=torch.int64)
    im_h, im_w = img_shape

    res = [paste_mask_in_image(m[0], b, im_h, im_w) for m, b in zip(masks, boxes)]
    if len(res) > 0:
        ret = torch.stack(res, dim=0)[:, None]
    else:
        ret = masks.new_empty((0, 1, im_h, im_w))
    return ret


class GeneralizedRCNNTransform(nn.Module):
    def postprocess(self, result, image_shapes, original_image_sizes):
        if self.training:
            return result
        for i, (pred, im_s, o_im_s) in enumerate(zip(result, image_shapes, original_image_sizes)):
            boxes = pred["boxes"]
            boxes = resize_boxes(boxes, im_s, o_im_s)
            result[i]["boxes"] = boxes
            if "masks" in pred:
                masks = pred["masks"]
                masks = paste_masks_in_image(masks, boxes, o_im_s)
                result[i]["masks"] = masks
            if "keypoints" in pred:
                keypoints = pred["keypoints"]
                keypoints = resize_keypoints(keypoints, im_s, o_im_s)
                result[i]["keypoints"] = keypoints
        return result

    def forward(self, result, image_shapes, original_image_sizes):
        return self.postprocess(result, image_shapes, original_image_sizes)


transform = GeneralizedRCNNTransform().eval()
transform.compile()


def make():
    torch.manual_seed(0)
    boxes = torch.tensor([[1.0, 2.0, 7.0, 9.0], [0.0, 0.0, 4.0, 3.0]])
    with_masks = [{"boxes": boxes, "masks": torch.rand(2, 1, 4, 4)}]
    with_keypoints = [{"boxes": boxes, "keypoints": torch.rand(2, 3, 3) * 8}]
    no_detections = [{"boxes": torch.zeros(0, 4), "masks": torch.zeros(0, 1, 4, 4)}]
    shapes, originals = [(10, 8)], [(12, 16)]
    return GeneralizedRCNNTransform().eval(), [
        (with_masks, shapes, originals),
        (with_keypoints, shapes, originals),
        (no_detections, shapes, originals),
    ]
