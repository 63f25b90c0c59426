"""simple-faster-rcnn trainer losses: masked smooth-L1 loc loss normalised by a count of valid labels.

Source: chenyuntc/simple-faster-rcnn-pytorch@13f811b2c8aec786850d916af326b0048d8dceb9:trainer.py:99-170,243-265
Kept: _smooth_l1_loss (flag from abs_diff.data, sigma2 arithmetic, y.sum()) and _fast_rcnn_loc_loss
(in_weight zeros, boolean-mask assignment through expand_as, in_weight.detach(), in-place division by
(gt_label >= 0).sum().float()), plus the RPN/ROI part of FasterRCNNTrainer.forward that calls them:
cross_entropy with ignore_index=-1, roi_cls_loc.view(n_sample, -1, 4) gathered with
t.arange(0, n_sample) and the sampled labels, nn.CrossEntropyLoss()(...) built inline, the summed
LossTuple namedtuple.
Simplified: the .cuda() calls are dropped (CPU); the numpy target creators, the confusion meters and
the extractor/RPN/head forward are replaced by their outputs passed in as tensors.
"""
from collections import namedtuple

import torch as t
from torch import nn
from torch.nn import functional as F

LossTuple = namedtuple('LossTuple',
                       ['rpn_loc_loss',
                        'rpn_cls_loss',
                        'roi_loc_loss',
                        'roi_cls_loss',
                        'total_loss'
                        ])


class Config:
    rpn_sigma = 3.
    roi_sigma = 1.


def _smooth_l1_loss(x, t, in_weight, sigma):
    sigma2 = sigma ** 2
    diff = in_weight * (x - t)
    abs_diff = diff.abs()
    flag = (abs_diff.data < (1. / sigma2)).float()
    y = (flag * (sigma2 / 2.) * (diff ** 2) +
         (1 - flag) * (abs_diff - 0.5 / sigma2))
    return y.sum()


def _fast_rcnn_loc_loss(pred_loc, gt_loc, gt_label, sigma):
    in_weight = t.zeros(gt_loc.shape)
    # Localization loss is calculated only for positive rois.
    # NOTE:  unlike origin implementation,
    # we don't need inside_weight and outside_weight, they can calculate by gt_label
    in_weight[(gt_label > 0).view(-1, 1).expand_as(in_weight)] = 1
    loc_loss = _smooth_l1_loss(pred_loc, gt_loc, in_weight.detach(), sigma)
    # Normalize by total number of negtive and positive rois.
    loc_loss /= ((gt_label >= 0).sum().float())  # ignore gt_label==-1 for rpn_loss
    return loc_loss


class FasterRCNNLosses(nn.Module):
    def __init__(self):
        super().__init__()
        self.rpn_sigma = Config.rpn_sigma
        self.roi_sigma = Config.roi_sigma

    def forward(self, rpn_loc, rpn_score, gt_rpn_loc, gt_rpn_label,
                roi_cls_loc, roi_score, gt_roi_loc, gt_roi_label):
        # ------------------ RPN losses -------------------#
        gt_rpn_label = gt_rpn_label.long()
        rpn_loc_loss = _fast_rcnn_loc_loss(
            rpn_loc,
            gt_rpn_loc,
            gt_rpn_label.data,
            self.rpn_sigma)

        # NOTE: default value of ignore_index is -100 ...
        rpn_cls_loss = F.cross_entropy(rpn_score, gt_rpn_label, ignore_index=-1)

        # ------------------ ROI losses (fast rcnn loss) -------------------#
        n_sample = roi_cls_loc.shape[0]
        roi_cls_loc = roi_cls_loc.view(n_sample, -1, 4)
        roi_loc = roi_cls_loc[t.arange(0, n_sample).long(),
                              gt_roi_label.long()]
        gt_roi_label = gt_roi_label.long()

        roi_loc_loss = _fast_rcnn_loc_loss(
            roi_loc.contiguous(),
            gt_roi_loc,
            gt_roi_label.data,
            self.roi_sigma)

        roi_cls_loss = nn.CrossEntropyLoss()(roi_score, gt_roi_label)

        losses = [rpn_loc_loss, rpn_cls_loss, roi_loc_loss, roi_cls_loss]
        losses = losses + [sum(losses)]

        return LossTuple(*losses)


def main():
    criterion = t.compile(FasterRCNNLosses())
    return criterion


def make():
    t.manual_seed(0)
    n_anchor, n_sample, n_class = 36, 12, 5
    rpn_loc = t.randn(n_anchor, 4, requires_grad=True)
    rpn_score = t.randn(n_anchor, 2, requires_grad=True)
    gt_rpn_loc = t.randn(n_anchor, 4)
    gt_rpn_label = t.randint(-1, 2, (n_anchor,))
    roi_cls_loc = t.randn(n_sample, n_class * 4, requires_grad=True)
    roi_score = t.randn(n_sample, n_class, requires_grad=True)
    gt_roi_loc = t.randn(n_sample, 4)
    gt_roi_label = t.randint(0, n_class, (n_sample,))
    return FasterRCNNLosses(), [(rpn_loc, rpn_score, gt_rpn_loc, gt_rpn_label,
                                 roi_cls_loc, roi_score, gt_roi_loc, gt_roi_label)]
