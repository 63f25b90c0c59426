"""YOLOv9 `ComputeLoss` target side: `preprocess` packs the flat target table per image with `i.unique(return_counts=True)`, `counts.max()` as a size and a per-image `if n:` on a tensor sum; then anchors and DFL box decoding.

Source: WongKinYiu/yolov9@5b1ea9a8b3f0ffe4fe0e203ec6232d788bb3fcff:utils/loss_tal.py:106-184
Also: utils/general.py:761-768 (xywh2xyxy), utils/tal/anchor_generator.py:8-32 (make_anchors,
dist2bbox).
Kept: ComputeLoss.__init__ plumbing (model.hyp, the Detect module's stride/nc/nl/no/reg_max,
the `proj` buffer), preprocess and bbox_decode verbatim, and __call__ up to the point where
the assigner is called (prediction split/permute, imgsz, make_anchors, preprocess, mask_gt,
bbox_decode).
Simplified: the TaskAlignedAssigner call and the loss terms after it are left out (the
compiled entry returns what it would hand to the assigner); FocalLoss/BCE setup dropped;
nc=3, reg_max 16, two levels at 4x4 and 2x2.
"""
import torch
import torch.nn as nn
import numpy as np


def xywh2xyxy(x):
    # Convert nx4 boxes from [x, y, w, h] to [x1, y1, x2, y2] where xy1=top-left, xy2=bottom-right
    y = x.clone() if isinstance(x, torch.Tensor) else np.copy(x)
    y[..., 0] = x[..., 0] - x[..., 2] / 2  # top left x
    y[..., 1] = x[..., 1] - x[..., 3] / 2  # top left y
    y[..., 2] = x[..., 0] + x[..., 2] / 2  # bottom right x
    y[..., 3] = x[..., 1] + x[..., 3] / 2  # bottom right y
    return y


def make_anchors(feats, strides, grid_cell_offset=0.5):
    """Generate anchors from features."""
    anchor_points, stride_tensor = [], []
    assert feats is not None
    dtype, device = feats[0].dtype, feats[0].device
    for i, stride in enumerate(strides):
        _, _, h, w = feats[i].shape
        sx = torch.arange(end=w, device=device, dtype=dtype) + grid_cell_offset  # shift x
        sy = torch.arange(end=h, device=device, dtype=dtype) + grid_cell_offset  # shift y
        sy, sx = torch.meshgrid(sy, sx, indexing='ij')
        anchor_points.append(torch.stack((sx, sy), -1).view(-1, 2))
        stride_tensor.append(torch.full((h * w, 1), stride, dtype=dtype, device=device))
    return torch.cat(anchor_points), torch.cat(stride_tensor)


def dist2bbox(distance, anchor_points, xywh=True, dim=-1):
    """Transform distance(ltrb) to box(xywh or xyxy)."""
    lt, rb = torch.split(distance, 2, dim)
    x1y1 = anchor_points - lt
    x2y2 = anchor_points + rb
    if xywh:
        c_xy = (x1y1 + x2y2) / 2
        wh = x2y2 - x1y1
        return torch.cat((c_xy, wh), dim)  # xywh bbox
    return torch.cat((x1y1, x2y2), dim)  # xyxy bbox


class DetectStub(nn.Module):
    # the attributes ComputeLoss reads from model.model[-1]
    def __init__(self, nc=3, nl=2):
        super().__init__()
        self.nc = nc
        self.nl = nl
        self.reg_max = 16
        self.no = nc + self.reg_max * 4
        self.stride = torch.tensor([8., 16.])
        self.conv = nn.Conv2d(1, 1, 1)


class TinyModel(nn.Module):
    hyp = {"cls_pw": 1.0, "fl_gamma": 0.0, "label_smoothing": 0.0}

    def __init__(self):
        super().__init__()
        self.model = nn.ModuleList([DetectStub()])


class ComputeLoss:
    # Compute losses
    def __init__(self, model, use_dfl=True):
        device = next(model.parameters()).device  # get model device
        h = model.hyp  # hyperparameters

        m = model.model[-1]  # Detect() module
        self.balance = {3: [4.0, 1.0, 0.4]}.get(m.nl, [4.0, 1.0, 0.25, 0.06, 0.02])  # P3-P7
        self.hyp = h
        self.stride = m.stride  # model strides
        self.nc = m.nc  # number of classes
        self.nl = m.nl  # number of layers
        self.no = m.no
        self.reg_max = m.reg_max
        self.device = device

        self.proj = torch.arange(m.reg_max).float().to(device)  # / 120.0
        self.use_dfl = use_dfl

    def preprocess(self, targets, batch_size, scale_tensor):
        if targets.shape[0] == 0:
            out = torch.zeros(batch_size, 0, 5, device=self.device)
        else:
            i = targets[:, 0]  # image index
            _, counts = i.unique(return_counts=True)
            out = torch.zeros(batch_size, counts.max(), 5, device=self.device)
            for j in range(batch_size):
                matches = i == j
                n = matches.sum()
                if n:
                    out[j, :n] = targets[matches, 1:]
            out[..., 1:5] = xywh2xyxy(out[..., 1:5].mul_(scale_tensor))
        return out

    def bbox_decode(self, anchor_points, pred_dist):
        if self.use_dfl:
            b, a, c = pred_dist.shape  # batch, anchors, channels
            pred_dist = pred_dist.view(b, a, 4, c // 4).softmax(3).matmul(self.proj.type(pred_dist.dtype))
        return dist2bbox(pred_dist, anchor_points, xywh=False)

    def __call__(self, p, targets, img=None, epoch=0):
        feats = p[1] if isinstance(p, tuple) else p
        pred_distri, pred_scores = torch.cat([xi.view(feats[0].shape[0], self.no, -1) for xi in feats], 2).split(
            (self.reg_max * 4, self.nc), 1)
        pred_scores = pred_scores.permute(0, 2, 1).contiguous()
        pred_distri = pred_distri.permute(0, 2, 1).contiguous()

        dtype = pred_scores.dtype
        batch_size, grid_size = pred_scores.shape[:2]
        imgsz = torch.tensor(feats[0].shape[2:], device=self.device, dtype=dtype) * self.stride[0]  # image size (h,w)
        anchor_points, stride_tensor = make_anchors(feats, self.stride, 0.5)

        # targets
        targets = self.preprocess(targets, batch_size, scale_tensor=imgsz[[1, 0, 1, 0]])
        gt_labels, gt_bboxes = targets.split((1, 4), 2)  # cls, xyxy
        mask_gt = gt_bboxes.sum(2, keepdim=True).gt_(0)

        # pboxes
        pred_bboxes = self.bbox_decode(anchor_points, pred_distri)  # xyxy, (b, h*w, 4)

        # (the assigner and the loss terms follow here in the original)
        return (pred_scores.detach().sigmoid(),
                (pred_bboxes.detach() * stride_tensor).type(gt_bboxes.dtype),
                anchor_points * stride_tensor,
                gt_labels,
                gt_bboxes,
                mask_gt)


compute_loss = ComputeLoss(TinyModel())
loss_targets = torch.compile(compute_loss.__call__)


def make():
    torch.manual_seed(0)
    no = 3 + 16 * 4
    feats = [torch.randn(2, no, 4, 4), torch.randn(2, no, 2, 2)]
    # image index, class, x, y, w, h (normalised)
    targets = torch.tensor([[0., 1., 0.5, 0.5, 0.2, 0.3],
                            [0., 2., 0.3, 0.6, 0.1, 0.1],
                            [1., 0., 0.7, 0.2, 0.3, 0.2]])
    only_first = targets[:2].clone()
    empty = torch.zeros(0, 6)
    return ComputeLoss(TinyModel()).__call__, [(feats, targets), (feats, only_first), (feats, empty)]
