"""YOLOv6's non_max_suppression: per-image boolean candidate reads, `if not x.shape[0]: continue` on the filtered count, `.nonzero(...).T` for multi-label, and `time.time()` bookkeeping inside the loop.

Source: meituan/YOLOv6@e86a483f3f6bded25d45970b56831345a99744a4:yolov6/utils/nms.py:21-107
Kept: xywh2xyxy with its isinstance check, non_max_suppression as
written (candidate mask, asserts, multi_label/classes/agnostic options,
max_nms and max_det caps, the time limit with its print), called from an
inference module the way yolov6/core/inferer.py:70-82 (Inferer.infer)
calls it after the model, with infer's conf_thres/iou_thres/classes/
agnostic_nms/max_det arguments (multi_label is added as a forward
argument so both label modes run).
Simplified: torchvision.ops.nms is a pure-torch greedy NMS stand-in
(`nms` below); the module-level cv2/print-option settings are dropped; the
detector is one stride-4 conv head (16 anchors on a 16x16 image), 2 classes.
"""
import time

import numpy as np
import torch
from torch import nn


def nms(boxes, scores, iou_threshold):
    # Stand-in for torchvision.ops.nms: greedy suppression in score order.
    order = scores.argsort(descending=True)
    boxes = boxes[order]
    area = (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])
    lt = torch.max(boxes[:, None, :2], boxes[None, :, :2])
    rb = torch.min(boxes[:, None, 2:], boxes[None, :, 2:])
    wh = (rb - lt).clamp(min=0)
    inter = wh[..., 0] * wh[..., 1]
    iou = inter / (area[:, None] + area[None, :] - inter)
    keep = torch.ones_like(scores, dtype=torch.bool)
    later = torch.triu(torch.ones_like(iou, dtype=torch.bool), diagonal=1)
    for i in range(boxes.size(0)):
        keep = keep & ~((iou[i] > iou_threshold) & later[i] & keep[i])
    return order[keep]


def xywh2xyxy(x):
    '''Convert boxes with shape [n, 4] from [x, y, w, h] to [x1, y1, x2, y2] where x1y1 is top-left, x2y2=bottom-right.'''
    y = x.clone() if isinstance(x, torch.Tensor) else np.copy(x)
    y[:, 0] = x[:, 0] - x[:, 2] / 2  # top left x
    y[:, 1] = x[:, 1] - x[:, 3] / 2  # top left y
    y[:, 2] = x[:, 0] + x[:, 2] / 2  # bottom right x
    y[:, 3] = x[:, 1] + x[:, 3] / 2  # bottom right y
    return y


def non_max_suppression(prediction, conf_thres=0.25, iou_thres=0.45, classes=None, agnostic=False, multi_label=False, max_det=300):
    """Runs Non-Maximum Suppression (NMS) on inference results."""

    num_classes = prediction.shape[2] - 5  # number of classes
    pred_candidates = torch.logical_and(prediction[..., 4] > conf_thres, torch.max(prediction[..., 5:], axis=-1)[0] > conf_thres)  # candidates
    # Check the parameters.
    assert 0 <= conf_thres <= 1, f'conf_thresh must be in 0.0 to 1.0, however {conf_thres} is provided.'
    assert 0 <= iou_thres <= 1, f'iou_thres must be in 0.0 to 1.0, however {iou_thres} is provided.'

    # Function settings.
    max_wh = 4096  # maximum box width and height
    max_nms = 30000  # maximum number of boxes put into torchvision.ops.nms()
    time_limit = 10.0  # quit the function when nms cost time exceed the limit time.
    multi_label &= num_classes > 1  # multiple labels per box

    tik = time.time()
    output = [torch.zeros((0, 6), device=prediction.device)] * prediction.shape[0]
    for img_idx, x in enumerate(prediction):  # image index, image inference
        x = x[pred_candidates[img_idx]]  # confidence

        # If no box remains, skip the next process.
        if not x.shape[0]:
            continue

        # confidence multiply the objectness
        x[:, 5:] *= x[:, 4:5]  # conf = obj_conf * cls_conf

        # (center x, center y, width, height) to (x1, y1, x2, y2)
        box = xywh2xyxy(x[:, :4])

        # Detections matrix's shape is  (n,6), each row represents (xyxy, conf, cls)
        if multi_label:
            box_idx, class_idx = (x[:, 5:] > conf_thres).nonzero(as_tuple=False).T
            x = torch.cat((box[box_idx], x[box_idx, class_idx + 5, None], class_idx[:, None].float()), 1)
        else:  # Only keep the class with highest scores.
            conf, class_idx = x[:, 5:].max(1, keepdim=True)
            x = torch.cat((box, conf, class_idx.float()), 1)[conf.view(-1) > conf_thres]

        # Filter by class, only keep boxes whose category is in classes.
        if classes is not None:
            x = x[(x[:, 5:6] == torch.tensor(classes, device=x.device)).any(1)]

        # Check shape
        num_box = x.shape[0]  # number of boxes
        if not num_box:  # no boxes kept.
            continue
        elif num_box > max_nms:  # excess max boxes' number.
            x = x[x[:, 4].argsort(descending=True)[:max_nms]]  # sort by confidence

        # Batched NMS
        class_offset = x[:, 5:6] * (0 if agnostic else max_wh)  # classes
        boxes, scores = x[:, :4] + class_offset, x[:, 4]  # boxes (offset by class), scores
        keep_box_idx = nms(boxes, scores, iou_thres)  # NMS
        if keep_box_idx.shape[0] > max_det:  # limit detections
            keep_box_idx = keep_box_idx[:max_det]

        output[img_idx] = x[keep_box_idx]
        if (time.time() - tik) > time_limit:
            print(f'WARNING: NMS cost time exceed the limited {time_limit}s.')
            break  # time limit exceeded

    return output


class TinyDetector(nn.Module):
    """Stand-in YOLOv6 model: a head that emits [B, anchors, 5 + nc] in xywh/obj/cls form."""

    def __init__(self, num_classes=2):
        super().__init__()
        self.head = nn.Conv2d(3, 5 + num_classes, kernel_size=4, stride=4)

    def forward(self, x):
        out = self.head(x).flatten(2).transpose(1, 2)
        xy = out[..., :2].sigmoid() * 16
        wh = out[..., 2:4].exp() * 4
        return torch.cat([xy, wh, out[..., 4:].sigmoid()], -1)


class Inferer(nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, img, conf_thres, iou_thres, classes, agnostic_nms, max_det, multi_label=False):
        pred_results = self.model(img)
        det = non_max_suppression(pred_results, conf_thres, iou_thres, classes, agnostic_nms,
                                  multi_label=multi_label, max_det=max_det)[0]
        return det


def build_inferer():
    return Inferer(TinyDetector()).eval()


inferer = torch.compile(build_inferer())


def make():
    torch.manual_seed(0)
    img = torch.randn(1, 3, 16, 16) * 3
    return build_inferer(), [
        (img, 0.4, 0.45, None, False, 1),
        (img, 0.4, 0.45, [0, 1], True, 3, True),
        (img, 0.99, 0.45, None, False, 1000),
        (img, 0.4, 0.45, [5], False, 1000),
    ]
