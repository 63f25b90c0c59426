"""PySOT SiamRPN classification loss: `label.data.eq(1).nonzero().squeeze()` picks positive/negative anchors, `get_cls_loss` returns 0 when the selection squeezed to a 0-d tensor, else `index_select` + nll_loss.

Source: STVIR/pysot@2172c96a11b13a21fd3336f95c79ec6595cb0707:pysot/models/loss.py:11-38
Also: pysot/models/model_builder.py (ModelBuilder.log_softmax and the training
forward that calls select_cross_entropy_loss and weight_l1_loss).
Kept: get_cls_loss, select_cross_entropy_loss and weight_l1_loss verbatim, the
ModelBuilder's log_softmax reshaping and the cfg.TRAIN.CLS_WEIGHT/LOC_WEIGHT
weighting of the outputs dict.
Simplified: the `.cuda()` calls are dropped (CPU only); the backbone, neck and
RPN head are replaced by the head outputs passed in directly; 1 anchor x 3x3.
"""
import torch
import torch.nn.functional as F
from torch import nn


class _Train:
    CLS_WEIGHT = 1.0
    LOC_WEIGHT = 1.2


class _Cfg:
    TRAIN = _Train()


cfg = _Cfg()


def get_cls_loss(pred, label, select):
    if len(select.size()) == 0:
        return 0
    pred = torch.index_select(pred, 0, select)
    label = torch.index_select(label, 0, select)
    return F.nll_loss(pred, label)


def select_cross_entropy_loss(pred, label):
    pred = pred.view(-1, 2)
    label = label.view(-1)
    pos = label.data.eq(1).nonzero().squeeze()
    neg = label.data.eq(0).nonzero().squeeze()
    loss_pos = get_cls_loss(pred, label, pos)
    loss_neg = get_cls_loss(pred, label, neg)
    return loss_pos * 0.5 + loss_neg * 0.5


def weight_l1_loss(pred_loc, label_loc, loss_weight):
    b, _, sh, sw = pred_loc.size()
    pred_loc = pred_loc.view(b, 4, -1, sh, sw)
    diff = (pred_loc - label_loc).abs()
    diff = diff.sum(dim=1).view(b, -1, sh, sw)
    loss = diff * loss_weight
    return loss.sum().div(b)


class ModelBuilder(nn.Module):
    def __init__(self):
        super(ModelBuilder, self).__init__()
        self.cls_adjust = nn.Conv2d(2, 2, kernel_size=1)

    def log_softmax(self, cls):
        b, a2, h, w = cls.size()
        cls = cls.view(b, 2, a2//2, h, w)
        cls = cls.permute(0, 2, 3, 4, 1).contiguous()
        cls = F.log_softmax(cls, dim=4)
        return cls

    def forward(self, data):
        label_cls = data['label_cls']
        label_loc = data['label_loc']
        label_loc_weight = data['label_loc_weight']

        cls = self.cls_adjust(data['cls'])
        loc = data['loc']

        # get loss
        cls = self.log_softmax(cls)
        cls_loss = select_cross_entropy_loss(cls, label_cls)
        loc_loss = weight_l1_loss(loc, label_loc, label_loc_weight)

        outputs = {}
        outputs['total_loss'] = cfg.TRAIN.CLS_WEIGHT * cls_loss + \
            cfg.TRAIN.LOC_WEIGHT * loc_loss
        outputs['cls_loss'] = cls_loss
        outputs['loc_loss'] = loc_loss
        return outputs


model = ModelBuilder().train()
model = torch.compile(model)


def make():
    torch.manual_seed(0)
    cls = torch.randn(2, 2, 3, 3)
    loc = torch.randn(2, 4, 3, 3)
    label_loc = torch.randn(2, 4, 1, 3, 3)
    label_loc_weight = torch.rand(2, 1, 3, 3)
    label_cls = torch.full((2, 1, 3, 3), -1, dtype=torch.long)
    label_cls[0, 0, 0, :2] = 1
    label_cls[1, 0, 2, :] = 0
    # exactly one positive anchor: `.squeeze()` leaves a 0-d tensor -> `return 0`
    label_one = torch.full((2, 1, 3, 3), 0, dtype=torch.long)
    label_one[1, 0, 1, 1] = 1

    def batch(lbl):
        return {'cls': cls, 'loc': loc, 'label_cls': lbl, 'label_loc': label_loc,
                'label_loc_weight': label_loc_weight}

    return ModelBuilder().train(), [(batch(label_cls),), (batch(label_one),)]
