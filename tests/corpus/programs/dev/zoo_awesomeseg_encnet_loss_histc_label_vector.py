"""EncNet loss: SE-loss targets from a per-image `torch.histc(target[i].cpu().data.float())` loop into a Variable, plus aux CE.

Source: Tramac/awesome-semantic-segmentation-pytorch@d37d2a17221d2681ad454958cf06a1065e9b1f7f:core/utils/loss.py:38-85,172-183
Kept: EncNetLoss verbatim (nn.CrossEntropyLoss subclass, the tuple
repacking of (preds, target), the se_loss/aux dispatch, super().forward
calls, BCELoss on sigmoid(se_pred), the static _get_batch_label_vector with
torch.autograd.Variable, .cpu().data, histc and `tvect[i] = vect`) and
get_segmentation_loss's 'encnet' dispatch.
Simplified: 4 classes, 8x8 maps, batch 2.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

from torch.autograd import Variable


class EncNetLoss(nn.CrossEntropyLoss):
    """2D Cross Entropy Loss with SE Loss"""

    def __init__(self, se_loss=True, se_weight=0.2, nclass=19, aux=False,
                 aux_weight=0.4, weight=None, ignore_index=-1, **kwargs):
        super(EncNetLoss, self).__init__(weight, None, ignore_index)
        self.se_loss = se_loss
        self.aux = aux
        self.nclass = nclass
        self.se_weight = se_weight
        self.aux_weight = aux_weight
        self.bceloss = nn.BCELoss(weight)

    def forward(self, *inputs):
        preds, target = tuple(inputs)
        inputs = tuple(list(preds) + [target])
        if not self.se_loss and not self.aux:
            return super(EncNetLoss, self).forward(*inputs)
        elif not self.se_loss:
            pred1, pred2, target = tuple(inputs)
            loss1 = super(EncNetLoss, self).forward(pred1, target)
            loss2 = super(EncNetLoss, self).forward(pred2, target)
            return dict(loss=loss1 + self.aux_weight * loss2)
        elif not self.aux:
            pred, se_pred, target = tuple(inputs)
            se_target = self._get_batch_label_vector(target, nclass=self.nclass).type_as(pred)
            loss1 = super(EncNetLoss, self).forward(pred, target)
            loss2 = self.bceloss(torch.sigmoid(se_pred), se_target)
            return dict(loss=loss1 + self.se_weight * loss2)
        else:
            pred1, se_pred, pred2, target = tuple(inputs)
            se_target = self._get_batch_label_vector(target, nclass=self.nclass).type_as(pred1)
            loss1 = super(EncNetLoss, self).forward(pred1, target)
            loss2 = super(EncNetLoss, self).forward(pred2, target)
            loss3 = self.bceloss(torch.sigmoid(se_pred), se_target)
            return dict(loss=loss1 + self.aux_weight * loss2 + self.se_weight * loss3)

    @staticmethod
    def _get_batch_label_vector(target, nclass):
        # target is a 3D Variable BxHxW, output is 2D BxnClass
        batch = target.size(0)
        tvect = Variable(torch.zeros(batch, nclass))
        for i in range(batch):
            hist = torch.histc(target[i].cpu().data.float(),
                               bins=nclass, min=0,
                               max=nclass - 1)
            vect = hist > 0
            tvect[i] = vect
        return tvect


def get_segmentation_loss(model, use_ohem=False, **kwargs):
    model = model.lower()
    if model == 'encnet':
        return EncNetLoss(**kwargs)
    raise NotImplementedError(model)


criterion = torch.compile(get_segmentation_loss('encnet', nclass=4, aux=True))


def make():
    torch.manual_seed(0)
    pred1 = torch.randn(2, 4, 8, 8)
    se_pred = torch.randn(2, 4)
    pred2 = torch.randn(2, 4, 8, 8)
    target = torch.randint(0, 3, (2, 8, 8))
    target[0, :2] = -1
    return get_segmentation_loss('encnet', nclass=4, aux=True), [((pred1, se_pred, pred2), target)]
