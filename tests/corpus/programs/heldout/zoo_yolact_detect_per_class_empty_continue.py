"""YOLACT Detect.detect_per_class: per class, `conf_scores[cl][c_mask]` and `decoded_boxes[l_mask]` boolean reads, `if scores.size(0) == 0: continue`, then the SSD-port nms with `while idx.numel() > 0` and `idx = idx[IoU.le(overlap)]`.

Source: dbolya/yolact@034fa0357e441057eb5b89083827b3623da2d527:layers/functions/detection.py:10-110
Also: dbolya/yolact@1a186de10a2362e64cb7a9519e2cbd4fd8580bf7:layers/box_utils.py:158-185 (decode), 199-265 (nms)
Kept: Detect.forward / detect_per_class verbatim (cross_class_nms = False), decode
(the variances branch) and nms verbatim, including its `out=` index_selects and
`resize_as_` calls, and the module-level cfg object both files read.
Simplified: the timer context manager and timer.start/stop are gone; Detect is a
plain object (the original subclasses the legacy autograd.Function without
staticmethods) owned by a small eval-mode wrapper module that the entry compiles;
3 classes, 6 priors, mask size 2x2.
"""
import torch
import torch.nn.functional as F
from torch import nn


class Config:
    force_cpu_detect = False
    force_cpu_nms = True
    use_yolo_regressors = False


cfg = Config()


def point_form(boxes):
    return torch.cat((boxes[:, :2] - boxes[:, 2:]/2,     # xmin, ymin
                     boxes[:, :2] + boxes[:, 2:]/2), 1)  # xmax, ymax


def decode(loc, priors):
    if cfg.use_yolo_regressors:
        # Decoded boxes in center-size notation
        boxes = torch.cat((
            loc[:, :2] + priors[:, :2],
            priors[:, 2:] * torch.exp(loc[:, 2:])
        ), 1)

        return point_form(boxes)
    else:
        variances = [0.1, 0.2]

        boxes = torch.cat((
        priors[:, :2] + loc[:, :2] * variances[0] * priors[:, 2:],
        priors[:, 2:] * torch.exp(loc[:, 2:] * variances[1])), 1)
        boxes[:, :2] -= boxes[:, 2:] / 2
        boxes[:, 2:] += boxes[:, :2]
        return boxes


def nms(boxes, scores, overlap=0.5, top_k=200, force_cpu=True):
    cuda_enabled = boxes.is_cuda

    if force_cpu:
        boxes = boxes.cpu()
        scores = scores.cpu()

    keep = scores.new(scores.size(0)).zero_().long()
    if boxes.numel() == 0:
        return keep
    x1 = boxes[:, 0]
    y1 = boxes[:, 1]
    x2 = boxes[:, 2]
    y2 = boxes[:, 3]
    area = torch.mul(x2 - x1, y2 - y1)
    v, idx = scores.sort(0)  # sort in ascending order
    idx = idx[-top_k:]  # indices of the top-k largest vals
    xx1 = boxes.new()
    yy1 = boxes.new()
    xx2 = boxes.new()
    yy2 = boxes.new()
    w = boxes.new()
    h = boxes.new()

    count = 0
    while idx.numel() > 0:
        i = idx[-1]  # index of current largest val
        keep[count] = i
        count += 1
        if idx.size(0) == 1:
            break
        idx = idx[:-1]  # remove kept element from view
        # load bboxes of next highest vals
        torch.index_select(x1, 0, idx, out=xx1)
        torch.index_select(y1, 0, idx, out=yy1)
        torch.index_select(x2, 0, idx, out=xx2)
        torch.index_select(y2, 0, idx, out=yy2)
        # store element-wise max with next highest score
        xx1 = torch.clamp(xx1, min=x1[i])
        yy1 = torch.clamp(yy1, min=y1[i])
        xx2 = torch.clamp(xx2, max=x2[i])
        yy2 = torch.clamp(yy2, max=y2[i])
        w.resize_as_(xx2)
        h.resize_as_(yy2)
        w = xx2 - xx1
        h = yy2 - yy1
        # check sizes of xx1 and xx2.. after each iteration
        w = torch.clamp(w, min=0.0)
        h = torch.clamp(h, min=0.0)
        inter = w*h
        # IoU = i / (area(a) + area(b) - i)
        rem_areas = torch.index_select(area, 0, idx)  # load remaining areas)
        union = (rem_areas - inter) + area[i]
        IoU = inter/union  # store result in iou
        # keep only elements with an IoU <= overlap
        idx = idx[IoU.le(overlap)]

    if cuda_enabled:
        keep = keep.cuda()

    return keep, count


class Detect(object):
    def __init__(self, num_classes, bkg_label, top_k, conf_thresh, nms_thresh):
        self.num_classes = num_classes
        self.background_label = bkg_label
        self.top_k = top_k
        # Parameters used in nms.
        self.nms_thresh = nms_thresh
        if nms_thresh <= 0:
            raise ValueError('nms_threshold must be non negative.')
        self.conf_thresh = conf_thresh

        self.cross_class_nms = False

    def forward(self, loc_data, conf_data, mask_data, prior_data):
        if cfg.force_cpu_detect:
            loc_data = loc_data.cpu()
            conf_data = conf_data.cpu()
            mask_data = mask_data.cpu()
            prior_data = prior_data.cpu()

        num = loc_data.size(0)  # batch size
        num_priors = prior_data.size(0)
        output = torch.zeros(num, self.top_k, 1 + 1 + 4 + mask_data.size(2))
        conf_preds = conf_data.view(num, num_priors,
                                    self.num_classes).transpose(2, 1)

        # Decode predictions into bboxes.
        for i in range(num):
            decoded_boxes = decode(loc_data[i], prior_data)

            if self.cross_class_nms:
                self.detect_cross_class(i, conf_preds, decoded_boxes, mask_data, output)
            else:
                self.detect_per_class(i, conf_preds, decoded_boxes, mask_data, output)

        return output

    def detect_cross_class(self, batch_idx, conf_preds, decoded_boxes, mask_data, output):
        """ Perform nms for only the max scoring class that isn't background (class 0) """
        conf_scores, class_labels = torch.max(conf_preds[batch_idx, 1:], 0)

        c_mask = conf_scores.gt(self.conf_thresh)
        scores = conf_scores[c_mask]
        classes = class_labels[c_mask]

        if scores.size(0) == 0:
            return

        l_mask = c_mask.unsqueeze(1).expand_as(decoded_boxes)
        boxes = decoded_boxes[l_mask].view(-1, 4)
        masks = mask_data[batch_idx, l_mask[:, 0], :]
        # idx of highest scoring and non-overlapping boxes per class
        ids, count = nms(boxes, scores, self.nms_thresh, self.top_k, force_cpu=cfg.force_cpu_nms)
        ids = ids[:count]
        output[batch_idx, :count] = \
            torch.cat((classes[ids].unsqueeze(1).float(), scores[ids].unsqueeze(1), boxes[ids], masks[ids]), 1)

    def detect_per_class(self, batch_idx, conf_preds, decoded_boxes, mask_data, output):
        """ Perform nms for each non-background class predicted. """
        conf_scores = conf_preds[batch_idx].clone()
        tmp_output = torch.zeros(self.num_classes-1, self.top_k, output.size(2))

        for cl in range(1, self.num_classes):
            c_mask = conf_scores[cl].gt(self.conf_thresh)
            scores = conf_scores[cl][c_mask]
            if scores.size(0) == 0:
                continue
            l_mask = c_mask.unsqueeze(1).expand_as(decoded_boxes)
            boxes = decoded_boxes[l_mask].view(-1, 4)
            masks = mask_data[batch_idx, l_mask[:, 0], :]
            # idx of highest scoring and non-overlapping boxes per class
            ids, count = nms(boxes, scores, self.nms_thresh, self.top_k, force_cpu=cfg.force_cpu_nms)
            ids = ids[:count]
            classes = torch.ones(count, 1).float()*(cl-1)
            tmp_output[cl-1, :count] = \
                torch.cat((classes, scores[ids].unsqueeze(1), boxes[ids], masks[ids]), 1)

        # Pool all the outputs together regardless of class and pick the top_k
        tmp_output = tmp_output.view(-1, output.size(2))
        _, idx = tmp_output[:, 1].sort(0, descending=True)
        output[batch_idx, :, :] = tmp_output[idx[:self.top_k], :]


class Yolact(nn.Module):
    def __init__(self, num_classes=3):
        super().__init__()
        self.num_classes = num_classes
        self.detect = Detect(num_classes, bkg_label=0, top_k=5, conf_thresh=0.3, nms_thresh=0.5)

    def forward(self, loc, conf, mask, priors):
        if self.training:
            return loc, conf, mask, priors
        conf = F.softmax(conf, -1)
        return self.detect.forward(loc, conf, mask, priors)


net = Yolact().eval()
net = torch.compile(net)


def make():
    torch.manual_seed(0)
    priors = torch.tensor([[0.2, 0.2, 0.2, 0.2], [0.22, 0.21, 0.2, 0.2], [0.7, 0.7, 0.3, 0.3],
                           [0.5, 0.5, 0.4, 0.4], [0.71, 0.69, 0.3, 0.3], [0.1, 0.8, 0.1, 0.1]])
    loc = torch.randn(1, 6, 4) * 0.1
    mask = torch.randn(1, 6, 4)
    # class 1 confident on overlapping priors 0/1 and 2/4, class 2 never above threshold
    conf = torch.full((1, 6, 3), -2.0)
    conf[0, :, 0] = 1.0
    conf[0, [0, 1, 2, 4], 1] = 3.0
    # every foreground class below threshold: both classes take `continue`
    conf_empty = torch.zeros(1, 6, 3)
    conf_empty[0, :, 0] = 4.0
    return Yolact().eval(), [(loc, conf, mask, priors), (loc, conf_empty, mask, priors)]
