"""OWL-ViT image-guided detection embed_image_query: `if torch.all(ious[0] == 0.0)` fallback, nonzero selection, `if selected_inds.numel():`.

Source: huggingface/transformers@v5.23.0:src/transformers/models/owlvit/modeling_owlvit.py:104-168,1250-1292
Kept: center_to_corners_format, box_area/box_iou/generalized_box_iou (without
its format checks), and embed_image_query's loop over query images: the
[0,0,1,1] query box, the all-zero IoU fallback, the 80% adaptive threshold,
nonzero of the selected boxes, the mean-similarity argmin pick and the stacks.
Simplified: the class/box predictors are linear layers; 4 patches, dim 4.
"""
import torch
from torch import nn


def center_to_corners_format(bboxes_center):
    center_x, center_y, width, height = bboxes_center.unbind(-1)
    return torch.stack([center_x - 0.5 * width, center_y - 0.5 * height, center_x + 0.5 * width, center_y + 0.5 * height], dim=-1)


def box_area(boxes):
    return (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])


def box_iou(boxes1, boxes2):
    area1 = box_area(boxes1)
    area2 = box_area(boxes2)
    left_top = torch.max(boxes1[:, None, :2], boxes2[:, :2])
    right_bottom = torch.min(boxes1[:, None, 2:], boxes2[:, 2:])
    width_height = (right_bottom - left_top).clamp(min=0)
    inter = width_height[:, :, 0] * width_height[:, :, 1]
    union = area1[:, None] + area2 - inter
    return inter / union, union


def generalized_box_iou(boxes1, boxes2):
    iou, union = box_iou(boxes1, boxes2)
    top_left = torch.min(boxes1[:, None, :2], boxes2[:, :2])
    bottom_right = torch.max(boxes1[:, None, 2:], boxes2[:, 2:])
    width_height = (bottom_right - top_left).clamp(min=0)
    area = width_height[:, :, 0] * width_height[:, :, 1]
    return iou - (area - union) / area


class OwlViTForObjectDetection(nn.Module):
    def __init__(self):
        super().__init__()
        self.class_head = nn.Linear(4, 4)
        self.box_head = nn.Linear(4, 4)

    def embed_image_query(self, query_image_features):
        class_embeds = self.class_head(query_image_features)
        pred_boxes = torch.sigmoid(self.box_head(query_image_features))
        pred_boxes_as_corners = center_to_corners_format(pred_boxes)
        best_class_embeds = []
        best_box_indices = []
        pred_boxes_device = pred_boxes_as_corners.device
        for i in range(query_image_features.shape[0]):
            each_query_box = torch.tensor([[0, 0, 1, 1]], device=pred_boxes_device)
            each_query_pred_boxes = pred_boxes_as_corners[i]
            ious, _ = box_iou(each_query_box, each_query_pred_boxes)
            if torch.all(ious[0] == 0.0):
                ious = generalized_box_iou(each_query_box, each_query_pred_boxes)
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
        return query_embeds, box_indices, pred_boxes

    def forward(self, query_image_features):
        return self.embed_image_query(query_image_features)


model = torch.compile(OwlViTForObjectDetection().eval())


def make():
    torch.manual_seed(0)
    return OwlViTForObjectDetection().eval(), [(torch.randn(2, 4, 4),)]
