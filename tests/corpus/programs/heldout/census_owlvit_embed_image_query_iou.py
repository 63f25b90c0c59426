"""OWL-ViT image-guided detection: `if torch.all(ious[0] == 0.0):` falls back to generalized IoU (which
validates boxes with `if not (...).all(): raise`), then `nonzero()` and `if selected_inds.numel():`.

Source: huggingface/transformers@v5.23.0:src/transformers/models/owlvit/modeling_owlvit.py:113-170, 1250-1290
Census: penguinwu/oss-model-graph-break-corpus sweeps OwlViTModel; `embed_image_query` is the
image-guided-detection path of OwlViTForObjectDetection.
Kept: box_area/_upcast, box_iou, generalized_box_iou with its two format checks, and embed_image_query's
loop (query box, IoU fallback, adaptive threshold, nonzero selection, argmin over similarities).
Simplified: class/box predictors are given as tensors; center_to_corners_format inlined as a helper.
"""
import torch
from torch import Tensor


def _upcast(t: Tensor) -> Tensor:
    # Protects from numerical overflows in multiplications by upcasting to the equivalent higher type
    if t.is_floating_point():
        return t if t.dtype in (torch.float32, torch.float64) else t.float()
    else:
        return t if t.dtype in (torch.int32, torch.int64) else t.int()


def box_area(boxes):
    boxes = _upcast(boxes)
    return (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])


def box_iou(boxes1, boxes2):
    area1 = box_area(boxes1)
    area2 = box_area(boxes2)
    left_top = torch.max(boxes1[:, None, :2], boxes2[:, :2])  # [N,M,2]
    right_bottom = torch.min(boxes1[:, None, 2:], boxes2[:, 2:])  # [N,M,2]
    width_height = (right_bottom - left_top).clamp(min=0)  # [N,M,2]
    inter = width_height[:, :, 0] * width_height[:, :, 1]  # [N,M]
    union = area1[:, None] + area2 - inter
    iou = inter / union
    return iou, union


def generalized_box_iou(boxes1, boxes2):
    # degenerate boxes gives inf / nan results
    # so do an early check
    if not (boxes1[:, 2:] >= boxes1[:, :2]).all():
        raise ValueError(f"boxes1 must be in [x0, y0, x1, y1] (corner) format, but got {boxes1}")
    if not (boxes2[:, 2:] >= boxes2[:, :2]).all():
        raise ValueError(f"boxes2 must be in [x0, y0, x1, y1] (corner) format, but got {boxes2}")
    iou, union = box_iou(boxes1, boxes2)
    top_left = torch.min(boxes1[:, None, :2], boxes2[:, :2])
    bottom_right = torch.max(boxes1[:, None, 2:], boxes2[:, 2:])
    width_height = (bottom_right - top_left).clamp(min=0)  # [N,M,2]
    area = width_height[:, :, 0] * width_height[:, :, 1]
    return iou - (area - union) / area


def center_to_corners_format(bboxes_center):
    center_x, center_y, width, height = bboxes_center.unbind(-1)
    return torch.stack([center_x - 0.5 * width, center_y - 0.5 * height,
                        center_x + 0.5 * width, center_y + 0.5 * height], dim=-1)


def embed_image_query(class_embeds, pred_boxes):
    pred_boxes_as_corners = center_to_corners_format(pred_boxes)

    # Loop over query images
    best_class_embeds = []
    best_box_indices = []
    pred_boxes_device = pred_boxes_as_corners.device

    for i in range(class_embeds.shape[0]):
        each_query_box = torch.tensor([[0, 0, 1, 1]], device=pred_boxes_device)
        each_query_pred_boxes = pred_boxes_as_corners[i]
        ious, _ = box_iou(each_query_box, each_query_pred_boxes)

        # If there are no overlapping boxes, fall back to generalized IoU
        if torch.all(ious[0] == 0.0):
            ious = generalized_box_iou(each_query_box, each_query_pred_boxes)

        # Use an adaptive threshold to include all boxes within 80% of the best IoU
        iou_threshold = torch.max(ious) * 0.8

        selected_inds = (ious[0] >= iou_threshold).nonzero()
        if selected_inds.numel():
            selected_embeddings = class_embeds[i][selected_inds.squeeze(1)]
            mean_embeds = torch.mean(class_embeds[i], axis=0)
            mean_sim = torch.einsum("d,id->i", mean_embeds, selected_embeddings)
            best_box_ind = selected_inds[torch.argmin(mean_sim)]
            best_class_embeds.append(class_embeds[i][best_box_ind])
            best_box_indices.append(best_box_ind)

    if best_class_embeds:
        query_embeds = torch.stack(best_class_embeds)
        box_indices = torch.stack(best_box_indices)
    else:
        query_embeds, box_indices = None, None
    return query_embeds, box_indices


compiled_query = torch.compile(embed_image_query)


def make():
    torch.manual_seed(0)
    embeds = torch.randn(1, 3, 4)
    inside = torch.tensor([[[0.5, 0.5, 0.4, 0.4], [0.5, 0.5, 0.8, 0.8], [0.2, 0.2, 0.1, 0.1]]])
    outside = torch.tensor([[[1.5, 1.5, 0.2, 0.2], [2.0, 2.0, 0.4, 0.4], [1.4, 1.6, 0.2, 0.2]]])
    return embed_image_query, [(embeds, inside), (embeds, outside)]
