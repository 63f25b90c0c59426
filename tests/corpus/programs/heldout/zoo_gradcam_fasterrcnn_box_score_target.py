"""pytorch-grad-cam's detection target: BaseCAM sums `target(output)` over FasterRCNNBoxScoreTarget objects, which return early on `len(model_outputs["boxes"]) == 0`, take `ious.argmax()` and test `if ious[0, index] > self.iou_threshold and model_outputs["labels"][index] == label`.

Source: jacobgil/pytorch-grad-cam@0fe25dac777f17e6200a10dc30159d3ffda62735:pytorch_grad_cam/utils/model_targets.py:80-109
Also: pytorch_grad_cam/base_cam.py@0666bb77aca3c5d8b1de8601bbb5bc128a6320d1 (forward: `loss = sum([target(output) for target,
output in zip(targets, outputs)])`); torchvision.ops.boxes.box_iou/_box_inter_union/box_area (inlined,
torchvision v0.20).
Kept: FasterRCNNBoxScoreTarget verbatim; the loss line of BaseCAM.forward.
Simplified: torchvision's box_iou is inlined; the detector outputs are
given as input dicts instead of coming from a hooked Faster R-CNN; the
backward pass and CAM image assembly are out of scope.
"""
import torch


def box_area(boxes):
    return (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])


def _box_inter_union(boxes1, boxes2):
    area1 = box_area(boxes1)
    area2 = box_area(boxes2)

    lt = torch.max(boxes1[:, None, :2], boxes2[:, :2])  # [N,M,2]
    rb = torch.min(boxes1[:, None, 2:], boxes2[:, 2:])  # [N,M,2]

    wh = (rb - lt).clamp(min=0)  # [N,M,2]
    inter = wh[:, :, 0] * wh[:, :, 1]  # [N,M]

    union = area1[:, None] + area2 - inter

    return inter, union


def box_iou(boxes1, boxes2):
    inter, union = _box_inter_union(boxes1, boxes2)
    iou = inter / union
    return iou


class FasterRCNNBoxScoreTarget:
    """ For every original detected bounding box specified in "bounding boxes",
        assign a score on how the current bounding boxes match it,
            1. In IOU
            2. In the classification score.
        If there is not a large enough overlap, or the category changed,
        assign a score of 0.

        The total score is the sum of all the box scores.
    """

    def __init__(self, labels, bounding_boxes, iou_threshold=0.5):
        self.labels = labels
        self.bounding_boxes = bounding_boxes
        self.iou_threshold = iou_threshold

    def __call__(self, model_outputs):
        device = model_outputs["boxes"].device
        output = torch.tensor([0.0], device=device)

        if len(model_outputs["boxes"]) == 0:
            return output

        for box, label in zip(self.bounding_boxes, self.labels):
            box = torch.as_tensor(box[None, :], device=device)

            ious = box_iou(box, model_outputs["boxes"])
            index = ious.argmax()
            if ious[0, index] > self.iou_threshold and model_outputs["labels"][index] == label:
                score = ious[0, index] + model_outputs["scores"][index]
                output = output + score
        return output


def cam_loss(outputs, targets):
    loss = sum([target(output) for target, output in zip(targets, outputs)])
    return loss


compiled_loss = torch.compile(cam_loss)


def make():
    torch.manual_seed(0)
    boxes = torch.tensor([[0.0, 0.0, 10.0, 10.0], [20.0, 20.0, 30.0, 35.0]])
    targets = [FasterRCNNBoxScoreTarget(labels=[1, 3], bounding_boxes=boxes)]
    matching = {
        "boxes": boxes + torch.rand(2, 4),
        "labels": torch.tensor([1, 3]),
        "scores": torch.tensor([0.9, 0.7]),
    }
    shifted = {
        "boxes": boxes + 50.0,
        "labels": torch.tensor([2, 3]),
        "scores": torch.tensor([0.4, 0.8]),
    }
    empty = {
        "boxes": torch.zeros(0, 4),
        "labels": torch.zeros(0, dtype=torch.long),
        "scores": torch.zeros(0),
    }
    return cam_loss, [([matching], targets), ([shifted], targets), ([empty], targets)]
