"""YOLOv5's non_max_suppression: candidates are kept with `x = x[xc[xi]]`, multi-label detections come from `(x[:, 5:mi] > conf_thres).nonzero(as_tuple=False).T`, and a `time.time()` budget logs a warning through `LOGGER`.

Source: ultralytics/yolov5@001042774dfbbc98f9e17fc4dfae8680fef7be99:utils/general.py:1046-1147 (xywh2xyxy from utils/general.py, box_iou from utils/metrics.py)
Kept: the threshold asserts, the (inference_out, loss_out) unwrap, the MPS
round trip, autolabel concatenation, multi-label vs best-class paths, class
filter, sort/trim to max_nms, class-offset boxes, merge-NMS, max_det and
the time-limit warning; a detect step that runs the model then NMS as
detect.py does.
Simplified: torchvision.ops.nms is a pure-torch greedy stand-in; the model
is one conv whose output is reshaped to (bs, anchors, 5 + nc) boxes;
3 classes, 12 candidate boxes per image.
"""
import logging
import time

import numpy as np
import torch
import torch.nn as nn

LOGGER = logging.getLogger("yolov5")


def xywh2xyxy(x):
    """Convert nx4 boxes from [x, y, w, h] to [x1, y1, x2, y2] where xy1=top-left, xy2=bottom-right."""
    y = x.clone() if isinstance(x, torch.Tensor) else np.copy(x)
    y[..., 0] = x[..., 0] - x[..., 2] / 2  # top left x
    y[..., 1] = x[..., 1] - x[..., 3] / 2  # top left y
    y[..., 2] = x[..., 0] + x[..., 2] / 2  # bottom right x
    y[..., 3] = x[..., 1] + x[..., 3] / 2  # bottom right y
    return y


def box_iou(box1, box2, eps=1e-7):
    """Return intersection-over-union (Jaccard index) of boxes (xyxy)."""
    (a1, a2), (b1, b2) = box1.unsqueeze(1).chunk(2, 2), box2.unsqueeze(0).chunk(2, 2)
    inter = (torch.min(a2, b2) - torch.max(a1, b1)).clamp(0).prod(2)

    # IoU = inter / (area1 + area2 - inter)
    return inter / ((a2 - a1).prod(2) + (b2 - b1).prod(2) - inter + eps)


def torchvision_nms(boxes, scores, iou_threshold):
    # Stand-in for torchvision.ops.nms: greedy suppression in score order.
    order = scores.argsort(descending=True)
    keep = []
    while order.numel() > 0:
        i = order[0]
        keep.append(i)
        if order.numel() == 1:
            break
        iou = box_iou(boxes[i][None], boxes[order[1:]])[0]
        order = order[1:][iou <= iou_threshold]
    return torch.stack(keep) if keep else torch.zeros(0, dtype=torch.long)


def non_max_suppression(
    prediction,
    conf_thres=0.25,
    iou_thres=0.45,
    classes=None,
    agnostic=False,
    multi_label=False,
    labels=(),
    max_det=300,
    nm=0,  # number of masks
):
    """Non-Maximum Suppression (NMS) on inference results to reject overlapping detections.

    Returns:
        list of detections, on (n,6) tensor per image [xyxy, conf, cls]
    """
    # Checks
    assert 0 <= conf_thres <= 1, f"Invalid Confidence threshold {conf_thres}, valid values are between 0.0 and 1.0"
    assert 0 <= iou_thres <= 1, f"Invalid IoU {iou_thres}, valid values are between 0.0 and 1.0"
    if isinstance(prediction, (list, tuple)):  # YOLOv5 model in validation model, output = (inference_out, loss_out)
        prediction = prediction[0]  # select only inference output

    device = prediction.device
    mps = "mps" in device.type  # Apple MPS
    if mps:  # MPS not fully supported yet, convert tensors to CPU before NMS
        prediction = prediction.cpu()
    bs = prediction.shape[0]  # batch size
    nc = prediction.shape[2] - nm - 5  # number of classes
    xc = prediction[..., 4] > conf_thres  # candidates

    # Settings
    max_wh = 7680  # (pixels) maximum box width and height
    max_nms = 30000  # maximum number of boxes into torchvision.ops.nms()
    time_limit = 0.5 + 0.05 * bs  # seconds to quit after
    redundant = True  # require redundant detections
    multi_label &= nc > 1  # multiple labels per box (adds 0.5ms/img)
    merge = False  # use merge-NMS

    t = time.time()
    mi = 5 + nc  # mask start index
    output = [torch.zeros((0, 6 + nm), device=prediction.device)] * bs
    for xi, x in enumerate(prediction):  # image index, image inference
        # Apply constraints
        x = x[xc[xi]]  # confidence

        # Cat apriori labels if autolabelling
        if labels and len(labels[xi]):
            lb = labels[xi]
            v = torch.zeros((len(lb), nc + nm + 5), device=x.device)
            v[:, :4] = lb[:, 1:5]  # box
            v[:, 4] = 1.0  # conf
            v[range(len(lb)), lb[:, 0].long() + 5] = 1.0  # cls
            x = torch.cat((x, v), 0)

        # If none remain process next image
        if not x.shape[0]:
            continue

        # Compute conf
        x[:, 5:] *= x[:, 4:5]  # conf = obj_conf * cls_conf

        # Box/Mask
        box = xywh2xyxy(x[:, :4])  # center_x, center_y, width, height) to (x1, y1, x2, y2)
        mask = x[:, mi:]  # zero columns if no masks

        # Detections matrix nx6 (xyxy, conf, cls)
        if multi_label:
            i, j = (x[:, 5:mi] > conf_thres).nonzero(as_tuple=False).T
            x = torch.cat((box[i], x[i, 5 + j, None], j[:, None].float(), mask[i]), 1)
        else:  # best class only
            conf, j = x[:, 5:mi].max(1, keepdim=True)
            x = torch.cat((box, conf, j.float(), mask), 1)[conf.view(-1) > conf_thres]

        # Filter by class
        if classes is not None:
            x = x[(x[:, 5:6] == torch.tensor(classes, device=x.device)).any(1)]

        # Check shape
        n = x.shape[0]  # number of boxes
        if not n:  # no boxes
            continue
        x = x[x[:, 4].argsort(descending=True)[:max_nms]]  # sort by confidence and remove excess boxes

        # Batched NMS
        c = x[:, 5:6] * (0 if agnostic else max_wh)  # classes
        boxes, scores = x[:, :4] + c, x[:, 4]  # boxes (offset by class), scores
        i = torchvision_nms(boxes, scores, iou_thres)  # NMS
        i = i[:max_det]  # limit detections
        if merge and (1 < n < 3e3):  # Merge NMS (boxes merged using weighted mean)
            # update boxes as boxes(i,4) = weights(i,n) * boxes(n,4)
            iou = box_iou(boxes[i], boxes) > iou_thres  # iou matrix
            weights = iou * scores[None]  # box weights
            x[i, :4] = torch.mm(weights, x[:, :4]).float() / weights.sum(1, keepdim=True)  # merged boxes
            if redundant:
                i = i[iou.sum(1) > 1]  # require redundancy

        output[xi] = x[i]
        if mps:
            output[xi] = output[xi].to(device)
        if (time.time() - t) > time_limit:
            LOGGER.warning(f"WARNING ⚠️ NMS time limit {time_limit:.3f}s exceeded")
            break  # time limit exceeded

    return output


class TinyDetect(nn.Module):
    def __init__(self, nc=3, na=3):
        super().__init__()
        self.nc, self.na, self.no = nc, na, nc + 5
        self.m = nn.Conv2d(3, na * self.no, kernel_size=4, stride=4)

    def forward(self, im):
        bs = im.shape[0]
        p = self.m(im).view(bs, self.na, self.no, -1).permute(0, 1, 3, 2).reshape(bs, -1, self.no).sigmoid()
        xy = p[..., :2] * im.shape[-1]
        wh = p[..., 2:4] * im.shape[-1] / 2
        return torch.cat((xy, wh, p[..., 4:]), -1), None


def detect_step(model, im, conf_thres=0.25, iou_thres=0.45, classes=None, agnostic=False, multi_label=False, labels=()):
    pred = model(im)
    pred = non_max_suppression(pred, conf_thres, iou_thres, classes, agnostic, multi_label, labels, max_det=5)
    return pred


compiled_detect_step = torch.compile(detect_step)


def make():
    torch.manual_seed(0)
    model = TinyDetect().eval()
    im = torch.rand(2, 3, 8, 8)
    autolabels = [torch.tensor([[1, 4.0, 4.0, 2.0, 2.0]]), torch.zeros((0, 5))]
    return detect_step, [
        (model, im),
        (model, im, 0.3, 0.45, None, False, True),
        (model, im, 0.2, 0.3, [0, 2], True, False, autolabels),
        (model, im, 0.99),
    ]
