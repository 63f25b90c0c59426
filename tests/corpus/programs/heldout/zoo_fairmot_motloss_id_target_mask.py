"""FairMOT MotLoss: the re-ID branch gathers embeddings at object centres and keeps the real objects with `id_head[batch['reg_mask'] > 0]` and `batch['ids'][batch['reg_mask'] > 0]`, inside a loop over `opt.num_stacks` with loss terms gated by `opt` weights.

Source: ifzhang/FairMOT@07d818a081709f056feeb40937e647d1295ef1e5:src/lib/trains/mot.py:20-73
Also: the helpers FairMOT copies verbatim from xingyizhou/CenterNet
src/lib/models/utils.py (_sigmoid, _gather_feat, _tranpose_and_gather_feat) and
src/lib/models/losses.py (RegL1Loss, FocalLoss, _neg_loss); the stored FairMOT
snapshot lacks those two files, so they were checked against CenterNet's copies.
Kept: MotLoss.__init__/forward verbatim for the default options (focal heatmap
loss, 'l1' regression, learned uncertainty weights s_det/s_id), the helpers it
calls, and the `opt` namespace plumbing.
Simplified: opt is a small class; sizes are 8x8 heatmaps, K=4 objects, 8-dim
embeddings and 5 identities; MSELoss/dense_wh/norm_wh/cat_spec_wh branches of
the constructor keep their conditions but only the defaults are built.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def _sigmoid(x):
    y = torch.clamp(x.sigmoid_(), min=1e-4, max=1-1e-4)
    return y


def _gather_feat(feat, ind, mask=None):
    dim  = feat.size(2)
    ind  = ind.unsqueeze(2).expand(ind.size(0), ind.size(1), dim)
    feat = feat.gather(1, ind)
    if mask is not None:
        mask = mask.unsqueeze(2).expand_as(feat)
        feat = feat[mask]
        feat = feat.view(-1, dim)
    return feat


def _tranpose_and_gather_feat(feat, ind):
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

    num_pos  = pos_inds.float().sum()
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
        pred = _tranpose_and_gather_feat(output, ind)
        mask = mask.unsqueeze(2).expand_as(pred).float()
        loss = F.l1_loss(pred * mask, target * mask, size_average=False)
        loss = loss / (mask.sum() + 1e-4)
        return loss


class Opt:
    mse_loss = False
    reg_loss = 'l1'
    dense_wh = False
    norm_wh = False
    cat_spec_wh = False
    reid_dim = 8
    nID = 5
    num_stacks = 1
    wh_weight = 0.1
    reg_offset = True
    off_weight = 1
    id_weight = 1
    hm_weight = 1


class MotLoss(torch.nn.Module):
    def __init__(self, opt):
        super(MotLoss, self).__init__()
        self.crit = torch.nn.MSELoss() if opt.mse_loss else FocalLoss()
        self.crit_reg = RegL1Loss() if opt.reg_loss == 'l1' else None
        self.crit_wh = torch.nn.L1Loss(reduction='sum') if opt.dense_wh else self.crit_reg
        self.opt = opt
        self.emb_dim = opt.reid_dim
        self.nID = opt.nID
        self.classifier = nn.Linear(self.emb_dim, self.nID)
        self.IDLoss = nn.CrossEntropyLoss(ignore_index=-1)
        self.emb_scale = math.sqrt(2) * math.log(self.nID - 1)
        self.s_det = nn.Parameter(-1.85 * torch.ones(1))
        self.s_id = nn.Parameter(-1.05 * torch.ones(1))

    def forward(self, outputs, batch):
        opt = self.opt
        hm_loss, wh_loss, off_loss, id_loss = 0, 0, 0, 0
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

            if opt.id_weight > 0:
                id_head = _tranpose_and_gather_feat(output['id'], batch['ind'])
                id_head = id_head[batch['reg_mask'] > 0].contiguous()
                id_head = self.emb_scale * F.normalize(id_head)
                id_target = batch['ids'][batch['reg_mask'] > 0]

                id_output = self.classifier(id_head).contiguous()
                id_loss += self.IDLoss(id_output, id_target)

        det_loss = opt.hm_weight * hm_loss + opt.wh_weight * wh_loss + opt.off_weight * off_loss

        loss = torch.exp(-self.s_det) * det_loss + torch.exp(-self.s_id) * id_loss + (self.s_det + self.s_id)
        loss *= 0.5

        loss_stats = {'loss': loss, 'hm_loss': hm_loss,
                      'wh_loss': wh_loss, 'off_loss': off_loss, 'id_loss': id_loss}
        return loss, loss_stats


def make():
    torch.manual_seed(0)

    def sample(n_obj):
        outputs = [{'hm': torch.randn(2, 1, 8, 8), 'wh': torch.randn(2, 4, 8, 8),
                    'reg': torch.randn(2, 2, 8, 8), 'id': torch.randn(2, 8, 8, 8)}]
        hm = torch.zeros(2, 1, 8, 8)
        ind = torch.randint(0, 64, (2, 4))
        reg_mask = torch.zeros(2, 4, dtype=torch.uint8)
        reg_mask[:, :n_obj] = 1
        if n_obj:
            hm.view(2, -1).scatter_(1, ind[:, :1], 1.0)
        batch = {'hm': hm, 'reg_mask': reg_mask, 'ind': ind, 'wh': torch.rand(2, 4, 4),
                 'reg': torch.rand(2, 4, 2), 'ids': torch.randint(0, 5, (2, 4))}
        return outputs, batch

    # objects present / an empty crop (num_pos == 0 in the focal loss)
    return MotLoss(Opt()), [sample(3), sample(0)]


def train():
    crit = torch.compile(MotLoss(Opt()))
    return crit
