"""CenterNet's ctdet training loss: the CornerNet focal loss `_neg_loss` branches on `if num_pos == 0:` where `num_pos` is a summed tensor, reached through ModelWithLoss -> CtdetLoss -> FocalLoss.neg_loss.

Source: xingyizhou/CenterNet@4c50fd3a46bdf63dbf2082c5cbb3458d39579e6c:src/lib/models/losses.py:42-149
Also: src/lib/models/utils.py:8-24 (_sigmoid, _gather_feat, _transpose_and_gather_feat),
src/lib/trains/ctdet.py:17-74 (CtdetLoss), src/lib/trains/base_trainer.py (ModelWithLoss).
Kept: _neg_loss verbatim, FocalLoss storing the function as self.neg_loss,
RegL1Loss with the deprecated size_average=False, CtdetLoss's opt plumbing
(num_stacks, mse_loss, wh_weight, reg_offset, off_weight) and its loss_stats dict,
ModelWithLoss returning (outputs[-1], loss, loss_stats).
Simplified: the DLA backbone is one conv per head on a 4x4 map; the dense_wh /
norm_wh / cat_spec_wh variants and the eval_oracle_* flags are dropped (default
opt: the wh loss goes through crit_reg).
"""
import torch
import torch.nn as nn
import torch.nn.functional as F


def _sigmoid(x):
    y = torch.clamp(x.sigmoid_(), min=1e-4, max=1 - 1e-4)
    return y


def _gather_feat(feat, ind, mask=None):
    dim = feat.size(2)
    ind = ind.unsqueeze(2).expand(ind.size(0), ind.size(1), dim)
    feat = feat.gather(1, ind)
    if mask is not None:
        mask = mask.unsqueeze(2).expand_as(feat)
        feat = feat[mask]
        feat = feat.view(-1, dim)
    return feat


def _transpose_and_gather_feat(feat, ind):
    feat = feat.permute(0, 2, 3, 1).contiguous()
    feat = feat.view(feat.size(0), -1, feat.size(3))
    feat = _gather_feat(feat, ind)
    return feat


def _neg_loss(pred, gt):
    ''' Modified focal loss. Exactly the same as CornerNet.
        Runs faster and costs a little bit more memory
      Arguments:
        pred (batch x c x h x w)
        gt_regr (batch x c x h x w)
    '''
    pos_inds = gt.eq(1).float()
    neg_inds = gt.lt(1).float()

    neg_weights = torch.pow(1 - gt, 4)

    loss = 0

    pos_loss = torch.log(pred) * torch.pow(1 - pred, 2) * pos_inds
    neg_loss = torch.log(1 - pred) * torch.pow(pred, 2) * neg_weights * neg_inds

    num_pos = pos_inds.float().sum()
    pos_loss = pos_loss.sum()
    neg_loss = neg_loss.sum()

    if num_pos == 0:
        loss = loss - neg_loss
    else:
        loss = loss - (pos_loss + neg_loss) / num_pos
    return loss


class FocalLoss(nn.Module):
    '''nn.Module warpper for focal loss'''
    def __init__(self):
        super(FocalLoss, self).__init__()
        self.neg_loss = _neg_loss

    def forward(self, out, target):
        return self.neg_loss(out, target)


class RegL1Loss(nn.Module):
    def __init__(self):
        super(RegL1Loss, self).__init__()

    def forward(self, output, mask, ind, target):
        pred = _transpose_and_gather_feat(output, ind)
        mask = mask.unsqueeze(2).expand_as(pred).float()
        loss = F.l1_loss(pred * mask, target * mask, size_average=False)
        loss = loss / (mask.sum() + 1e-4)
        return loss


class CtdetLoss(torch.nn.Module):
    def __init__(self, opt):
        super(CtdetLoss, self).__init__()
        self.crit = torch.nn.MSELoss() if opt.mse_loss else FocalLoss()
        self.crit_reg = RegL1Loss() if opt.reg_loss == 'l1' else None
        self.opt = opt

    def forward(self, outputs, batch):
        opt = self.opt
        hm_loss, wh_loss, off_loss = 0, 0, 0
        for s in range(opt.num_stacks):
            output = outputs[s]
            if not opt.mse_loss:
                output['hm'] = _sigmoid(output['hm'])

            hm_loss += self.crit(output['hm'], batch['hm']) / opt.num_stacks
            if opt.wh_weight > 0:
                wh_loss += self.crit_reg(
                    output['wh'], batch['reg_mask'],
                    batch['ind'], batch['wh']) / opt.num_stacks

            if opt.reg_offset and opt.off_weight > 0:
                off_loss += self.crit_reg(output['reg'], batch['reg_mask'],
                                          batch['ind'], batch['reg']) / opt.num_stacks

        loss = opt.hm_weight * hm_loss + opt.wh_weight * wh_loss + \
            opt.off_weight * off_loss
        loss_stats = {'loss': loss, 'hm_loss': hm_loss,
                      'wh_loss': wh_loss, 'off_loss': off_loss}
        return loss, loss_stats


class Opt:
    mse_loss = False
    reg_loss = 'l1'
    num_stacks = 1
    hm_weight = 1
    wh_weight = 0.1
    off_weight = 1
    reg_offset = True
    num_classes = 2


class CenterHeads(nn.Module):
    def __init__(self, heads, in_ch=3):
        super().__init__()
        self.heads = heads
        for head in self.heads:
            self.__setattr__(head, nn.Conv2d(in_ch, self.heads[head], kernel_size=1))

    def forward(self, x):
        z = {}
        for head in self.heads:
            z[head] = self.__getattr__(head)(x)
        return [z]


class ModelWithLoss(torch.nn.Module):
    def __init__(self, model, loss):
        super(ModelWithLoss, self).__init__()
        self.model = model
        self.loss = loss

    def forward(self, batch):
        outputs = self.model(batch['input'])
        loss, loss_stats = self.loss(outputs, batch)
        return outputs[-1], loss, loss_stats


def build(opt=Opt()):
    heads = {'hm': opt.num_classes, 'wh': 2, 'reg': 2}
    return ModelWithLoss(CenterHeads(heads), CtdetLoss(opt))


model_with_loss = torch.compile(build())


def make():
    torch.manual_seed(0)
    model = build()
    hm = torch.rand(2, 2, 4, 4) * 0.9
    hm[0, 1, 2, 3] = 1.0
    hm[1, 0, 1, 1] = 1.0
    batch = {
        'input': torch.randn(2, 3, 4, 4),
        'hm': hm,
        'reg_mask': torch.tensor([[1, 0], [1, 1]], dtype=torch.uint8),
        'ind': torch.tensor([[11, 0], [5, 2]]),
        'wh': torch.rand(2, 2, 2) * 3,
        'reg': torch.rand(2, 2, 2),
    }
    empty = dict(batch)
    empty['hm'] = torch.rand(2, 2, 4, 4) * 0.9
    return model, [(batch,), (empty,)]
