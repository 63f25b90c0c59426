"""torchvision RetinaNet eval path: per-level score threshold with a boolean-mask read and 1-arg torch.where, topk, batched NMS.

Source: pytorch/vision@v0.29.1:torchvision/models/detection/retinanet.py:509-571,649-666; torchvision/ops/boxes.py:57-110,155-188; torchvision/models/detection/_utils.py:488-511
Kept: RetinaNet.postprocess_detections verbatim (the per-image, per-level loop,
`scores_per_level[keep_idxs]`, `torch.where(keep_idxs)[0]`, _topk_min, the
floor division into anchor ids, clip_boxes_to_image, batched_nms and the
detections_per_img cut), the eval half of forward that recovers the level
sizes and splits head outputs and anchors per level, and batched_nms with the
coordinate-trick path.
Simplified: the backbone/head/anchor generator are inputs; BoxCoder.decode_single
is reduced to `anchors + deltas * weights`; torchvision.ops.nms (a C++ kernel)
is replaced by a descending score order; _topk_min keeps its non-tracing line.
"""
import torch
from torch import Tensor, nn


def _topk_min(input: Tensor, orig_kval: int, axis: int) -> int:
    return min(orig_kval, input.size(axis))


def clip_boxes_to_image(boxes: Tensor, size: tuple) -> Tensor:
    dim = boxes.dim()
    boxes_x = boxes[..., 0::2]
    boxes_y = boxes[..., 1::2]
    height, width = size
    boxes_x = boxes_x.clamp(min=0, max=width)
    boxes_y = boxes_y.clamp(min=0, max=height)
    clipped_boxes = torch.stack((boxes_x, boxes_y), dim=dim)
    return clipped_boxes.reshape(boxes.shape)


def nms(boxes: Tensor, scores: Tensor, iou_threshold: float) -> Tensor:
    return torch.argsort(scores, descending=True)


def _batched_nms_coordinate_trick(boxes: Tensor, scores: Tensor, idxs: Tensor, iou_threshold: float) -> Tensor:
    if boxes.numel() == 0:
        return torch.empty((0,), dtype=torch.int64, device=boxes.device)
    max_coordinate = boxes.max()
    offsets = idxs.to(boxes) * (max_coordinate + torch.tensor(1).to(boxes))
    boxes_for_nms = boxes + offsets[:, None]
    keep = nms(boxes_for_nms, scores, iou_threshold)
    return keep


def batched_nms(boxes: Tensor, scores: Tensor, idxs: Tensor, iou_threshold: float) -> Tensor:
    return _batched_nms_coordinate_trick(boxes, scores, idxs, iou_threshold)


class BoxCoder:
    def __init__(self, weights):
        self.weights = weights

    def decode_single(self, rel_codes: Tensor, boxes: Tensor) -> Tensor:
        return boxes + rel_codes * rel_codes.new_tensor(self.weights)


class RetinaNet(nn.Module):
    def __init__(self, score_thresh=0.05, nms_thresh=0.5, detections_per_img=6, topk_candidates=4):
        super().__init__()
        self.box_coder = BoxCoder(weights=(1.0, 1.0, 1.0, 1.0))
        self.score_thresh = score_thresh
        self.nms_thresh = nms_thresh
        self.detections_per_img = detections_per_img
        self.topk_candidates = topk_candidates

    def postprocess_detections(self, head_outputs, anchors, image_shapes):
        class_logits = head_outputs["cls_logits"]
        box_regression = head_outputs["bbox_regression"]

        num_images = len(image_shapes)

        detections: list = []

        for index in range(num_images):
            box_regression_per_image = [br[index] for br in box_regression]
            logits_per_image = [cl[index] for cl in class_logits]
            anchors_per_image, image_shape = anchors[index], image_shapes[index]

            image_boxes = []
            image_scores = []
            image_labels = []

            for box_regression_per_level, logits_per_level, anchors_per_level in zip(
                box_regression_per_image, logits_per_image, anchors_per_image
            ):
                num_classes = logits_per_level.shape[-1]

                # remove low scoring boxes
                scores_per_level = torch.sigmoid(logits_per_level).flatten()
                keep_idxs = scores_per_level > self.score_thresh
                scores_per_level = scores_per_level[keep_idxs]
                topk_idxs = torch.where(keep_idxs)[0]

                # keep only topk scoring predictions
                num_topk = _topk_min(topk_idxs, self.topk_candidates, 0)
                scores_per_level, idxs = scores_per_level.topk(num_topk)
                topk_idxs = topk_idxs[idxs]

                anchor_idxs = torch.div(topk_idxs, num_classes, rounding_mode="floor")
                labels_per_level = topk_idxs % num_classes

                boxes_per_level = self.box_coder.decode_single(
                    box_regression_per_level[anchor_idxs], anchors_per_level[anchor_idxs]
                )
                boxes_per_level = clip_boxes_to_image(boxes_per_level, image_shape)

                image_boxes.append(boxes_per_level)
                image_scores.append(scores_per_level)
                image_labels.append(labels_per_level)

            image_boxes = torch.cat(image_boxes, dim=0)
            image_scores = torch.cat(image_scores, dim=0)
            image_labels = torch.cat(image_labels, dim=0)

            # non-maximum suppression
            keep = batched_nms(image_boxes, image_scores, image_labels, self.nms_thresh)
            keep = keep[: self.detections_per_img]

            detections.append(
                {
                    "boxes": image_boxes[keep],
                    "scores": image_scores[keep],
                    "labels": image_labels[keep],
                }
            )

        return detections

    def forward(self, features, head_outputs, anchors, image_sizes):
        # recover level sizes
        num_anchors_per_level = [x.size(2) * x.size(3) for x in features]
        HW = 0
        for v in num_anchors_per_level:
            HW += v
        HWA = head_outputs["cls_logits"].size(1)
        A = HWA // HW
        num_anchors_per_level = [hw * A for hw in num_anchors_per_level]

        # split outputs per level
        split_head_outputs = {}
        for k in head_outputs:
            split_head_outputs[k] = list(head_outputs[k].split(num_anchors_per_level, dim=1))
        split_anchors = [list(a.split(num_anchors_per_level)) for a in anchors]

        # compute the detections
        detections = self.postprocess_detections(split_head_outputs, split_anchors, image_sizes)
        return detections


detector = torch.compile(RetinaNet().eval(), dynamic=False)


def make():
    torch.manual_seed(0)
    features = [torch.randn(2, 4, 2, 2), torch.randn(2, 4, 1, 1)]
    num_anchors = (4 + 1) * 2
    anchors = [torch.rand(num_anchors, 4) * 8 for _ in range(2)]
    image_sizes = [(16, 16), (12, 16)]
    some = {"cls_logits": torch.randn(2, num_anchors, 3), "bbox_regression": torch.randn(2, num_anchors, 4)}
    none = {"cls_logits": torch.full((2, num_anchors, 3), -9.0), "bbox_regression": torch.randn(2, num_anchors, 4)}
    return RetinaNet().eval(), [(features, some, anchors, image_sizes), (features, none, anchors, image_sizes)]
