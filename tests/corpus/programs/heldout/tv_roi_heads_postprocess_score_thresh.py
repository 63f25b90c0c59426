"""torchvision RoIHeads.postprocess_detections: clip boxes, drop background, `torch.where(scores > thresh)[0]`, remove_small_boxes.

Source: pytorch/vision@v0.29.2:torchvision/models/detection/roi_heads.py:680-737; torchvision/ops/boxes.py:129-188
Kept: boxes_per_image from shapes, decode, softmax, split per image, the zip
loop with clip_boxes_to_image (is_tracing switch, clamp), the labels expand,
background removal, reshapes, the score-threshold where, remove_small_boxes,
top detections_per_img, and the three output lists.
Simplified: box decode is an add of deltas; batched_nms is left out (C++ op).
"""
import torch
import torch.nn.functional as F


def clip_boxes_to_image(boxes, size):
    dim = boxes.dim()
    boxes_x = boxes[..., 0::2]
    boxes_y = boxes[..., 1::2]
    height, width = size
    if torch.jit.is_tracing():
        boxes_x = torch.max(boxes_x, torch.tensor(0, dtype=boxes.dtype, device=boxes.device))
        boxes_x = torch.min(boxes_x, torch.tensor(width, dtype=boxes.dtype, device=boxes.device))
    else:
        boxes_x = boxes_x.clamp(min=0, max=width)
        boxes_y = boxes_y.clamp(min=0, max=height)
    clipped_boxes = torch.stack((boxes_x, boxes_y), dim=dim)
    return clipped_boxes.reshape(boxes.shape)


def remove_small_boxes(boxes, min_size):
    ws, hs = boxes[..., 2] - boxes[..., 0], boxes[..., 3] - boxes[..., 1]
    keep = (ws >= min_size) & (hs >= min_size)
    keep = torch.where(keep)[0]
    return keep


class RoIHeads(torch.nn.Module):
    def __init__(self, score_thresh=0.2, detections_per_img=5):
        super().__init__()
        self.score_thresh = score_thresh
        self.detections_per_img = detections_per_img

    def postprocess_detections(self, class_logits, box_regression, proposals, image_shapes):
        device = class_logits.device
        num_classes = class_logits.shape[-1]
        boxes_per_image = [boxes_in_image.shape[0] for boxes_in_image in proposals]
        pred_boxes = torch.cat(proposals).unsqueeze(1) + box_regression.view(-1, num_classes, 4)
        pred_scores = F.softmax(class_logits, -1)
        pred_boxes_list = pred_boxes.split(boxes_per_image, 0)
        pred_scores_list = pred_scores.split(boxes_per_image, 0)
        all_boxes, all_scores, all_labels = [], [], []
        for boxes, scores, image_shape in zip(pred_boxes_list, pred_scores_list, image_shapes):
            boxes = clip_boxes_to_image(boxes, image_shape)
            labels = torch.arange(num_classes, device=device)
            labels = labels.view(1, -1).expand_as(scores)
            boxes = boxes[:, 1:]
            scores = scores[:, 1:]
            labels = labels[:, 1:]
            boxes = boxes.reshape(-1, 4)
            scores = scores.reshape(-1)
            labels = labels.reshape(-1)
            inds = torch.where(scores > self.score_thresh)[0]
            boxes, scores, labels = boxes[inds], scores[inds], labels[inds]
            keep = remove_small_boxes(boxes, min_size=1e-2)
            boxes, scores, labels = boxes[keep], scores[keep], labels[keep]
            keep = torch.arange(boxes.shape[0])[: self.detections_per_img]
            boxes, scores, labels = boxes[keep], scores[keep], labels[keep]
            all_boxes.append(boxes)
            all_scores.append(scores)
            all_labels.append(labels)
        return all_boxes, all_scores, all_labels

    def forward(self, class_logits, box_regression, proposals, image_shapes):
        return self.postprocess_detections(class_logits, box_regression, proposals, image_shapes)


roi_heads = torch.compile(RoIHeads().eval())


def make():
    torch.manual_seed(0)
    proposals = [torch.tensor([[0.0, 0.0, 4.0, 4.0], [2.0, 2.0, 6.0, 7.0]]), torch.tensor([[1.0, 1.0, 3.0, 3.0]])]
    return RoIHeads().eval(), [(torch.randn(3, 3), torch.randn(3, 12) * 0.1, proposals, [(8, 8), (8, 8)])]
