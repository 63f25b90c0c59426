"""HRNet semantic segmentation FullModel + OhemCrossEntropy over [aux, main] outputs (sort, masked select, Python max of a tensor and a float).

Source: HRNet/HRNet-Semantic-Segmentation@3ce340bc520946fb220e83075f6e015bbe87cfe5:lib/core/criterion.py:OhemCrossEntropy
FullModel: HRNet/HRNet-Semantic-Segmentation@06142dc1c7026e256a7561c3e875b06622b5670f:lib/utils/utils.py:FullModel
Kept: OhemCrossEntropy (_ce_forward/_ohem_forward with the resize branch,
ignore-label mask, gather, `.view(-1,)[mask].sort()`, `min(self.min_kept,
pred.numel() - 1)`, `max(min_value, self.thresh)`, `pixel_losses[pred <
threshold]`) and its forward over `config.MODEL.NUM_OUTPUTS` /
`config.LOSS.BALANCE_WEIGHTS`; FullModel returning `(torch.unsqueeze(loss, 0),
outputs)`.
Simplified: the global yacs `config` is a SimpleNamespace; the HRNet-OCR
network is a two-head conv stand-in returning [aux, main] at 1/4 resolution;
4 classes, 32x32 labels, min_kept 100, thres 0.3.
"""
import types

import torch
import torch.nn as nn
from torch.nn import functional as F

config = types.SimpleNamespace(
    MODEL=types.SimpleNamespace(NUM_OUTPUTS=2, ALIGN_CORNERS=False),
    LOSS=types.SimpleNamespace(BALANCE_WEIGHTS=[0.4, 1.0], OHEMTHRES=0.3, OHEMKEEP=100),
    TRAIN=types.SimpleNamespace(IGNORE_LABEL=255),
    DATASET=types.SimpleNamespace(NUM_CLASSES=4),
)


class OhemCrossEntropy(nn.Module):
    def __init__(self, ignore_label=-1, thres=0.7,
                 min_kept=100000, weight=None):
        super(OhemCrossEntropy, self).__init__()
        self.thresh = thres
        self.min_kept = max(1, min_kept)
        self.ignore_label = ignore_label
        self.criterion = nn.CrossEntropyLoss(
            weight=weight,
            ignore_index=ignore_label,
            reduction='none'
        )

    def _ce_forward(self, score, target):
        ph, pw = score.size(2), score.size(3)
        h, w = target.size(1), target.size(2)
        if ph != h or pw != w:
            score = F.interpolate(input=score, size=(
                h, w), mode='bilinear', align_corners=config.MODEL.ALIGN_CORNERS)

        loss = self.criterion(score, target)

        return loss

    def _ohem_forward(self, score, target, **kwargs):
        ph, pw = score.size(2), score.size(3)
        h, w = target.size(1), target.size(2)
        if ph != h or pw != w:
            score = F.interpolate(input=score, size=(
                h, w), mode='bilinear', align_corners=config.MODEL.ALIGN_CORNERS)
        pred = F.softmax(score, dim=1)
        pixel_losses = self.criterion(score, target).contiguous().view(-1)
        mask = target.contiguous().view(-1) != self.ignore_label

        tmp_target = target.clone()
        tmp_target[tmp_target == self.ignore_label] = 0
        pred = pred.gather(1, tmp_target.unsqueeze(1))
        pred, ind = pred.contiguous().view(-1,)[mask].contiguous().sort()
        min_value = pred[min(self.min_kept, pred.numel() - 1)]
        threshold = max(min_value, self.thresh)

        pixel_losses = pixel_losses[mask][ind]
        pixel_losses = pixel_losses[pred < threshold]
        return pixel_losses.mean()

    def forward(self, score, target):

        if config.MODEL.NUM_OUTPUTS == 1:
            score = [score]

        weights = config.LOSS.BALANCE_WEIGHTS
        assert len(weights) == len(score)

        functions = [self._ce_forward] * \
            (len(weights) - 1) + [self._ohem_forward]
        return sum([
            w * func(x, target)
            for (w, x, func) in zip(weights, score, functions)
        ])


class SegNet(nn.Module):
    """Stand-in for seg_hrnet_ocr: a stride-4 stem with an aux head and a main head."""

    def __init__(self, num_classes):
        super().__init__()
        self.stem = nn.Sequential(
            nn.Conv2d(3, 8, 3, 2, 1), nn.BatchNorm2d(8), nn.ReLU(inplace=True),
            nn.Conv2d(8, 8, 3, 2, 1), nn.BatchNorm2d(8), nn.ReLU(inplace=True))
        self.aux_head = nn.Conv2d(8, num_classes, 1)
        self.cls_head = nn.Conv2d(8, num_classes, 1)

    def forward(self, x):
        feats = self.stem(x)
        out_aux = self.aux_head(feats)
        out = self.cls_head(feats)
        out_aux_seg = []
        out_aux_seg.append(out_aux)
        out_aux_seg.append(out)
        return out_aux_seg


class FullModel(nn.Module):
  """
  Distribute the loss on multi-gpu to reduce
  the memory cost in the main gpu.
  """
  def __init__(self, model, loss):
    super(FullModel, self).__init__()
    self.model = model
    self.loss = loss

  def forward(self, inputs, labels):
    outputs = self.model(inputs)
    loss = self.loss(outputs, labels)
    return torch.unsqueeze(loss,0), outputs


def build():
    model = SegNet(config.DATASET.NUM_CLASSES)
    criterion = OhemCrossEntropy(ignore_label=config.TRAIN.IGNORE_LABEL,
                                 thres=config.LOSS.OHEMTHRES,
                                 min_kept=config.LOSS.OHEMKEEP)
    return FullModel(model, criterion)


model = torch.compile(build())


def make():
    torch.manual_seed(0)
    full = build()
    images = torch.randn(2, 3, 32, 32)
    labels = torch.randint(0, 4, (2, 32, 32))
    labels[:, :4, :] = 255                          # ignored border rows
    # same images, labels = the model's own argmax: the kept probabilities
    # are all high, so min_value beats thres
    with torch.no_grad():
        own = F.interpolate(full.model(images)[1], size=(32, 32), mode='bilinear').argmax(1)
    return full, [(images, labels), (images * 8.0, own)]
