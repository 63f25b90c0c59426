"""Ultralytics YOLOv8 detection loss: `preprocess` sizes its padded target tensor with `batch_idx.unique(return_counts=True)` and `counts.max()`, and the box/DFL loss runs under `if fg_mask.sum():`.

Source: ultralytics/ultralytics@00033e8fbb067a7872c9a92ce3b15282ba2921f4:ultralytics/utils/loss.py:96-160,330-480
Also: ultralytics/utils/tal.py (make_anchors, dist2bbox, bbox2dist),
ultralytics/utils/metrics.py (bbox_iou with CIoU), ultralytics/utils/ops.py (xywh2xyxy).
Kept: DFLoss, BboxLoss, v8DetectionLoss.preprocess/bbox_decode and
get_assigned_targets_and_loss's non-objectness path (targets concat and
preprocess, mask_gt, TAL call site, `max(target_scores.sum(), 1)`, BCE cls
loss, the `if fg_mask.sum():` box loss, the gains), loss() scaling by batch.
Simplified: the TaskAlignedAssigner is a stand-in that assigns each anchor
whose centre lies inside a gt box to that box (the real assigner is another
corpus program); bbox_iou keeps only the xyxy CIoU path BboxLoss calls; the
Detect head is a 1x1 conv on one 4x4 level, stride 8;
2 classes, reg_max 4.
"""
import math
from types import SimpleNamespace
from typing import Any

import torch
import torch.nn as nn
import torch.nn.functional as F


def xywh2xyxy(x):
    assert x.shape[-1] == 4, f"input shape last dimension expected 4 but input shape is {x.shape}"
    y = torch.empty_like(x)  # faster than clone/copy
    xy = x[..., :2]  # centers
    wh = x[..., 2:] / 2  # half width-height
    y[..., :2] = xy - wh  # top left xy
    y[..., 2:] = xy + wh  # bottom right xy
    return y


def make_anchors(feats, strides, grid_cell_offset=0.5):
    """Generate anchors from features."""
    anchor_points, stride_tensor = [], []
    assert feats is not None
    dtype, device = feats[0].dtype, feats[0].device
    for i, stride in enumerate(strides):
        h, w = feats[i].shape[2:] if isinstance(feats, list) else (int(feats[i][0]), int(feats[i][1]))
        sx = torch.arange(end=w, device=device, dtype=dtype) + grid_cell_offset  # shift x
        sy = torch.arange(end=h, device=device, dtype=dtype) + grid_cell_offset  # shift y
        sy, sx = torch.meshgrid(sy, sx, indexing="ij")
        anchor_points.append(torch.stack((sx, sy), -1).view(-1, 2))
        stride_tensor.append(torch.full((h * w, 1), stride, dtype=dtype, device=device))
    return torch.cat(anchor_points), torch.cat(stride_tensor)


def dist2bbox(distance, anchor_points, xywh=True, dim=-1):
    """Transform distance(ltrb) to box(xywh or xyxy)."""
    lt, rb = distance.chunk(2, dim)
    x1y1 = anchor_points - lt
    x2y2 = anchor_points + rb
    if xywh:
        c_xy = (x1y1 + x2y2) / 2
        wh = x2y2 - x1y1
        return torch.cat((c_xy, wh), dim)  # xywh bbox
    return torch.cat((x1y1, x2y2), dim)  # xyxy bbox


def bbox2dist(anchor_points, bbox, reg_max=None):
    """Transform bbox(xyxy) to dist(ltrb)."""
    x1y1, x2y2 = bbox.chunk(2, -1)
    dist = torch.cat((anchor_points - x1y1, x2y2 - anchor_points), -1)
    if reg_max is not None:
        dist = dist.clamp_(0, reg_max - 0.01)  # dist (lt, rb)
    return dist


def bbox_iou(box1, box2, xywh=True, GIoU=False, DIoU=False, CIoU=False, eps=1e-7):
    """IoU of box1 (n, 4) to box2 (n, 4); the xyxy, CIoU path BboxLoss takes."""
    assert not xywh and CIoU, "only the call BboxLoss makes is reproduced"
    b1_x1, b1_y1, b1_x2, b1_y2 = box1.chunk(4, -1)
    b2_x1, b2_y1, b2_x2, b2_y2 = box2.chunk(4, -1)
    w1, h1 = b1_x2 - b1_x1, b1_y2 - b1_y1 + eps
    w2, h2 = b2_x2 - b2_x1, b2_y2 - b2_y1 + eps

    inter_w = (b1_x2.minimum(b2_x2) - b1_x1.maximum(b2_x1)).clamp_(0)
    inter_h = (b1_y2.minimum(b2_y2) - b1_y1.maximum(b2_y1)).clamp_(0)
    inter = inter_w * inter_h
    iou = inter / (w1 * h1 + w2 * h2 - inter + eps)

    # Complete IoU https://arxiv.org/abs/1911.08287v1: centre distance over the enclosing diagonal,
    # plus the aspect-ratio consistency term
    cw = b1_x2.maximum(b2_x2) - b1_x1.minimum(b2_x1)
    ch = b1_y2.maximum(b2_y2) - b1_y1.minimum(b2_y1)
    diagonal2 = cw.pow(2) + ch.pow(2) + eps
    centre2 = ((b2_x1 + b2_x2 - b1_x1 - b1_x2).pow(2) + (b2_y1 + b2_y2 - b1_y1 - b1_y2).pow(2)) / 4
    v = (4 / math.pi**2) * ((w2 / h2).atan() - (w1 / h1).atan()).pow(2)
    with torch.no_grad():
        alpha = v / (v - iou + (1 + eps))
    return iou - (centre2 / diagonal2 + v * alpha)


class DFLoss(nn.Module):
    """Criterion class for computing Distribution Focal Loss (DFL)."""

    def __init__(self, reg_max: int = 16) -> None:
        super().__init__()
        self.reg_max = reg_max

    def __call__(self, pred_dist: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        target = target.clamp_(0, self.reg_max - 1 - 0.01)
        tl = target.long()  # target left
        tr = tl + 1  # target right
        wl = tr - target  # weight left
        wr = 1 - wl  # weight right
        return (
            F.cross_entropy(pred_dist, tl.view(-1), reduction="none").view(tl.shape) * wl
            + F.cross_entropy(pred_dist, tr.view(-1), reduction="none").view(tl.shape) * wr
        ).mean(-1, keepdim=True)


class BboxLoss(nn.Module):
    """Criterion class for computing training losses for bounding boxes."""

    def __init__(self, reg_max: int = 16):
        super().__init__()
        self.dfl_loss = DFLoss(reg_max) if reg_max > 1 else None

    def forward(self, pred_dist, pred_bboxes, anchor_points, target_bboxes, target_scores, target_scores_sum,
                fg_mask, imgsz, stride):
        weight = target_scores.sum(-1)[fg_mask].unsqueeze(-1)
        iou = bbox_iou(pred_bboxes[fg_mask], target_bboxes[fg_mask], xywh=False, CIoU=True)
        loss_iou = ((1.0 - iou) * weight).sum() / target_scores_sum

        # DFL loss
        if self.dfl_loss:
            target_ltrb = bbox2dist(anchor_points, target_bboxes, self.dfl_loss.reg_max - 1)
            loss_dfl = self.dfl_loss(pred_dist[fg_mask].view(-1, self.dfl_loss.reg_max), target_ltrb[fg_mask]) * weight
            loss_dfl = loss_dfl.sum() / target_scores_sum
        else:
            target_ltrb = bbox2dist(anchor_points, target_bboxes)
            # normalize ltrb by image size
            target_ltrb = target_ltrb * stride
            target_ltrb[..., 0::2] /= imgsz[1]
            target_ltrb[..., 1::2] /= imgsz[0]
            pred_dist = pred_dist * stride
            pred_dist[..., 0::2] /= imgsz[1]
            pred_dist[..., 1::2] /= imgsz[0]
            loss_dfl = (
                F.l1_loss(pred_dist[fg_mask], target_ltrb[fg_mask], reduction="none").mean(-1, keepdim=True) * weight
            )
            loss_dfl = loss_dfl.sum() / target_scores_sum

        return loss_iou, loss_dfl


class CenterInBoxAssigner(nn.Module):
    """Stand-in for TaskAlignedAssigner with the same call and outputs."""

    def __init__(self, num_classes: int):
        super().__init__()
        self.num_classes = num_classes

    @torch.no_grad()
    def forward(self, pd_scores, pd_bboxes, anc_points, gt_labels, gt_bboxes, mask_gt):
        if gt_bboxes.shape[1] == 0:  # TaskAlignedAssigner's early return for images without boxes
            return (
                torch.full_like(pd_scores[..., 0], self.num_classes).long(),
                torch.zeros_like(pd_bboxes),
                torch.zeros_like(pd_scores),
                torch.zeros_like(pd_scores[..., 0]).bool(),
                torch.zeros_like(pd_scores[..., 0]).long(),
            )
        lt = anc_points[None, None] - gt_bboxes[:, :, None, :2]
        rb = gt_bboxes[:, :, None, 2:] - anc_points[None, None]
        inside = torch.cat((lt, rb), -1).amin(-1).gt(0) & mask_gt.bool()  # (b, n_max_boxes, anchors)
        target_gt_idx = inside.float().argmax(1)  # (b, anchors)
        fg_mask = inside.any(1)
        target_labels = gt_labels.long().squeeze(-1).gather(1, target_gt_idx)
        target_bboxes = gt_bboxes.gather(1, target_gt_idx[..., None].expand(-1, -1, 4))
        target_scores = F.one_hot(target_labels.clamp(min=0), self.num_classes) * fg_mask[..., None]
        return target_labels, target_bboxes, target_scores.float(), fg_mask, target_gt_idx


class v8DetectionLoss:
    """Criterion class for computing training losses for YOLOv8 object detection."""

    def __init__(self, model, tal_topk: int = 10):  # model must be de-paralleled
        device = next(model.parameters()).device  # get model device
        h = model.args  # hyperparameters

        m = model.model[-1]  # Detect() module
        self.bce = nn.BCEWithLogitsLoss(reduction="none")
        self.hyp = h
        self.stride = m.stride  # model strides
        self.nc = m.nc  # number of classes
        self.no = m.nc + m.reg_max * 4
        self.reg_max = m.reg_max
        self.device = device

        self.use_dfl = m.reg_max > 1
        self.class_weights = getattr(model, "class_weights", None)

        self.assigner = CenterInBoxAssigner(num_classes=self.nc)
        self.bbox_loss = BboxLoss(m.reg_max).to(device)
        self.proj = torch.arange(m.reg_max, dtype=torch.float, device=device)

    def preprocess(self, targets: torch.Tensor, batch_size: int, scale_tensor: torch.Tensor) -> torch.Tensor:
        """Preprocess targets by converting to tensor format and scaling coordinates."""
        nl, ne = targets.shape
        if nl == 0:
            out = torch.zeros(batch_size, 0, ne - 1, device=self.device)
        else:
            batch_idx = targets[:, 0].long()  # image index
            _, counts = batch_idx.unique(return_counts=True)
            counts = counts.to(dtype=torch.int32)
            out = torch.zeros(batch_size, counts.max(), ne - 1, device=self.device)
            offsets = torch.zeros(batch_size + 1, dtype=torch.long, device=self.device)
            offsets.scatter_add_(0, batch_idx + 1, torch.ones_like(batch_idx))
            offsets = offsets.cumsum(0)
            within_idx = torch.arange(nl, device=self.device) - offsets[batch_idx]
            out[batch_idx, within_idx] = targets[:, 1:]
            out[..., 1:5] = xywh2xyxy(out[..., 1:5].mul_(scale_tensor))
        return out

    def bbox_decode(self, anchor_points: torch.Tensor, pred_dist: torch.Tensor) -> torch.Tensor:
        """Decode predicted object bounding box coordinates from anchor points and distribution."""
        if self.use_dfl:
            b, a, c = pred_dist.shape  # batch, anchors, channels
            pred_dist = pred_dist.view(b, a, 4, c // 4).softmax(3).matmul(self.proj.type(pred_dist.dtype))
        return dist2bbox(pred_dist, anchor_points, xywh=False)

    def get_assigned_targets_and_loss(self, preds: dict, batch: dict[str, Any]) -> tuple:
        loss = torch.zeros(3, device=self.device)  # box, cls, dfl
        pred_distri, pred_scores = (
            preds["boxes"].permute(0, 2, 1).contiguous(),
            preds["scores"].permute(0, 2, 1).contiguous(),
        )
        anchor_points, stride_tensor = make_anchors(preds["feats"], self.stride, 0.5)

        dtype = pred_scores.dtype
        batch_size = pred_scores.shape[0]
        imgsz = torch.tensor(preds["feats"][0].shape[2:], device=self.device, dtype=dtype) * self.stride[0]

        # Targets
        targets = torch.cat((batch["batch_idx"].view(-1, 1), batch["cls"].view(-1, 1), batch["bboxes"]), 1)
        targets = self.preprocess(targets.to(self.device), batch_size, scale_tensor=imgsz[[1, 0, 1, 0]])
        gt_labels, gt_bboxes = targets.split((1, 4), 2)  # cls, xyxy
        mask_gt = gt_bboxes.sum(2, keepdim=True).gt_(0.0)

        # Pboxes
        pred_bboxes = self.bbox_decode(anchor_points, pred_distri)  # xyxy, (b, h*w, 4)

        target_labels, target_bboxes, target_scores, fg_mask, target_gt_idx = self.assigner(
            pred_scores.detach().sigmoid(),
            (pred_bboxes.detach() * stride_tensor).type(gt_bboxes.dtype),
            anchor_points * stride_tensor,
            gt_labels,
            gt_bboxes,
            mask_gt,
        )

        target_scores_sum = max(target_scores.sum(), 1)

        bce_loss = self.bce(pred_scores, target_scores.to(dtype))  # (bs, num_anchors, nc)
        if self.class_weights is not None:
            bce_loss *= self.class_weights
        loss[1] = bce_loss.sum() / target_scores_sum  # BCE

        # Bbox loss
        if fg_mask.sum():
            loss[0], loss[2] = self.bbox_loss(
                pred_distri,
                pred_bboxes,
                anchor_points,
                target_bboxes / stride_tensor,
                target_scores,
                target_scores_sum,
                fg_mask,
                imgsz,
                stride_tensor,
            )

        loss[0] *= self.hyp.box  # box gain
        loss[1] *= self.hyp.cls  # cls gain
        loss[2] *= self.hyp.dfl  # dfl gain
        return (
            (fg_mask, target_gt_idx, target_bboxes, anchor_points, stride_tensor),
            loss,
            loss.detach(),
        )  # loss(box, cls, dfl)

    def __call__(self, preds, batch):
        return self.loss(preds, batch)

    def loss(self, preds, batch):
        """Calculate detection loss using assigned targets."""
        batch_size = preds["boxes"].shape[0]
        loss, loss_detach = self.get_assigned_targets_and_loss(preds, batch)[1:]
        return loss * batch_size, loss_detach


class Detect(nn.Module):
    def __init__(self, nc=2, ch=8, reg_max=4):
        super().__init__()
        self.nc = nc
        self.reg_max = reg_max
        self.stride = torch.tensor([8.0])
        self.cv2 = nn.Conv2d(ch, 4 * reg_max, 1)
        self.cv3 = nn.Conv2d(ch, nc, 1)

    def forward(self, x):
        feats = [x]
        boxes = self.cv2(x).flatten(2)
        scores = self.cv3(x).flatten(2)
        return {"boxes": boxes, "scores": scores, "feats": feats}


class DetectionModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.model = nn.Sequential(nn.Conv2d(3, 8, 3, stride=8, padding=1), Detect())
        self.args = SimpleNamespace(box=7.5, cls=0.5, dfl=1.5)
        self.criterion = None

    def init_criterion(self):
        return v8DetectionLoss(self)

    def forward(self, img, batch_idx, cls, bboxes):
        """BaseModel.loss: run the model, then the criterion on the batch."""
        if getattr(self, "criterion", None) is None:
            self.criterion = self.init_criterion()
        preds = self.model(img)
        batch = {"batch_idx": batch_idx, "cls": cls, "bboxes": bboxes}
        return self.criterion(preds, batch)


def make():
    torch.manual_seed(0)
    model = DetectionModel()
    img = torch.randn(2, 3, 32, 32)
    batch_idx = torch.tensor([0.0, 0.0, 1.0])
    cls = torch.tensor([0.0, 1.0, 1.0])
    bboxes = torch.tensor([[0.3, 0.3, 0.4, 0.4], [0.7, 0.6, 0.3, 0.5], [0.5, 0.5, 0.6, 0.6]])
    tiny = torch.tensor([[0.01, 0.01, 0.01, 0.01]])
    return model, [
        (img, batch_idx, cls, bboxes),
        (img, torch.tensor([1.0]), torch.tensor([0.0]), tiny),
        (img, torch.zeros(0), torch.zeros(0), torch.zeros(0, 4)),
    ]


def train():
    model = DetectionModel()
    model = torch.compile(model)
    return model
