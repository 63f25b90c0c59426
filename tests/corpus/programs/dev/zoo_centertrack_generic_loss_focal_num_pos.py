"""CenterTrack `GenericLoss`: in-place `_sigmoid` on the heatmap, FastFocalLoss with `if num_pos == 0` on a tensor, weighted L1 per regression head, and a per-head losses dict.

Source: xingyizhou/CenterTrack@e4e7534cc2ebfbd31e0cde680988f286c65fe34f:src/lib/trainer.py:20-100
Also: src/lib/model/losses.py:67-126 (_only_neg_loss, FastFocalLoss, RegWeightedL1Loss),
src/lib/model/utils.py:8-26 (_sigmoid, _gather_feat, _tranpose_and_gather_feat).
Kept: GenericLoss (_sigmoid_output, the num_stacks loop, regression_heads, the weighted
total) and ModleWithLoss (the training wrapper that calls the model then the loss, with the
`'pre_img' in batch` plumbing) verbatim; the losses verbatim.
Simplified: the DLA backbone is one conv with CenterTrack's head dict (hm, reg, wh, tracking);
rot/nuscenes_att criteria not built (not in opt.heads); 8x8 maps, 4 objects per image.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F


def _sigmoid(x):
  y = torch.clamp(x.sigmoid_(), min=1e-4, max=1-1e-4)
  return y

def _gather_feat(feat, ind):
  dim = feat.size(2)
  ind = ind.unsqueeze(2).expand(ind.size(0), ind.size(1), dim)
  feat = feat.gather(1, ind)
  return feat

def _tranpose_and_gather_feat(feat, ind):
  feat = feat.permute(0, 2, 3, 1).contiguous()
  feat = feat.view(feat.size(0), -1, feat.size(3))
  feat = _gather_feat(feat, ind)
  return feat


def _only_neg_loss(pred, gt):
  gt = torch.pow(1 - gt, 4)
  neg_loss = torch.log(1 - pred) * torch.pow(pred, 2) * gt
  return neg_loss.sum()

class FastFocalLoss(nn.Module):
  '''
  Reimplemented focal loss, exactly the same as the CornerNet version.
  Faster and costs much less memory.
  '''
  def __init__(self, opt=None):
    super(FastFocalLoss, self).__init__()
    self.only_neg_loss = _only_neg_loss

  def forward(self, out, target, ind, mask, cat):
    '''
    Arguments:
      out, target: B x C x H x W
      ind, mask: B x M
      cat (category id for peaks): B x M
    '''
    neg_loss = self.only_neg_loss(out, target)
    pos_pred_pix = _tranpose_and_gather_feat(out, ind) # B x M x C
    pos_pred = pos_pred_pix.gather(2, cat.unsqueeze(2)) # B x M
    num_pos = mask.sum()
    pos_loss = torch.log(pos_pred) * torch.pow(1 - pos_pred, 2) * \
               mask.unsqueeze(2)
    pos_loss = pos_loss.sum()
    if num_pos == 0:
      return - neg_loss
    return - (pos_loss + neg_loss) / num_pos


class RegWeightedL1Loss(nn.Module):
  def __init__(self):
    super(RegWeightedL1Loss, self).__init__()
  
  def forward(self, output, mask, ind, target):
    pred = _tranpose_and_gather_feat(output, ind)
    # loss = F.l1_loss(pred * mask, target * mask, reduction='elementwise_mean')
    loss = F.l1_loss(pred * mask, target * mask, reduction='sum')
    loss = loss / (mask.sum() + 1e-4)
    return loss


class GenericLoss(torch.nn.Module):
  def __init__(self, opt):
    super(GenericLoss, self).__init__()
    self.crit = FastFocalLoss(opt=opt)
    self.crit_reg = RegWeightedL1Loss()
    self.opt = opt

  def _sigmoid_output(self, output):
    if 'hm' in output:
      output['hm'] = _sigmoid(output['hm'])
    if 'hm_hp' in output:
      output['hm_hp'] = _sigmoid(output['hm_hp'])
    if 'dep' in output:
      output['dep'] = 1. / (output['dep'].sigmoid() + 1e-6) - 1.
    return output

  def forward(self, outputs, batch):
    opt = self.opt
    losses = {head: 0 for head in opt.heads}

    for s in range(opt.num_stacks):
      output = outputs[s]
      output = self._sigmoid_output(output)

      if 'hm' in output:
        losses['hm'] += self.crit(
          output['hm'], batch['hm'], batch['ind'], 
          batch['mask'], batch['cat']) / opt.num_stacks
      
      regression_heads = [
        'reg', 'wh', 'tracking', 'ltrb', 'ltrb_amodal', 'hps', 
        'dep', 'dim', 'amodel_offset', 'velocity']

      for head in regression_heads:
        if head in output:
          losses[head] += self.crit_reg(
            output[head], batch[head + '_mask'],
            batch['ind'], batch[head]) / opt.num_stacks
      
      if 'hm_hp' in output:
        losses['hm_hp'] += self.crit(
          output['hm_hp'], batch['hm_hp'], batch['hp_ind'], 
          batch['hm_hp_mask'], batch['joint']) / opt.num_stacks
        if 'hp_offset' in output:
          losses['hp_offset'] += self.crit_reg(
            output['hp_offset'], batch['hp_offset_mask'],
            batch['hp_ind'], batch['hp_offset']) / opt.num_stacks

    losses['tot'] = 0
    for head in opt.heads:
      losses['tot'] += opt.weights[head] * losses[head]
    
    return losses['tot'], losses


class ModleWithLoss(torch.nn.Module):
  def __init__(self, model, loss):
    super(ModleWithLoss, self).__init__()
    self.model = model
    self.loss = loss
  
  def forward(self, batch):
    pre_img = batch['pre_img'] if 'pre_img' in batch else None
    pre_hm = batch['pre_hm'] if 'pre_hm' in batch else None
    outputs = self.model(batch['image'], pre_img, pre_hm)
    loss, loss_stats = self.loss(outputs, batch)
    return outputs[-1], loss, loss_stats


class Opt:
  heads = {'hm': 3, 'reg': 2, 'wh': 2, 'tracking': 2}
  weights = {'hm': 1, 'reg': 1, 'wh': 0.1, 'tracking': 1}
  num_stacks = 1


class TinyTrackNet(nn.Module):
  # stands in for DLASeg: image (+ previous image and heatmap) -> one head dict per stack
  def __init__(self, heads, num_stacks=1):
    super().__init__()
    self.num_stacks = num_stacks
    self.heads = heads
    self.base = nn.Conv2d(3, 8, 3, padding=1)
    self.pre_img_layer = nn.Conv2d(3, 8, 3, padding=1)
    self.pre_hm_layer = nn.Conv2d(1, 8, 3, padding=1)
    for head in self.heads:
      self.__setattr__(head, nn.Conv2d(8, self.heads[head], 1))

  def forward(self, x, pre_img=None, pre_hm=None):
    y = self.base(x)
    if pre_img is not None:
      y = y + self.pre_img_layer(pre_img)
    if pre_hm is not None:
      y = y + self.pre_hm_layer(pre_hm)
    feats = [torch.relu(y)]
    out = []
    for s in range(self.num_stacks):
      z = {}
      for head in self.heads:
        z[head] = self.__getattr__(head)(feats[s])
      out.append(z)
    return out


def build(opt):
  return ModleWithLoss(TinyTrackNet(opt.heads, opt.num_stacks), GenericLoss(opt))


model_with_loss = torch.compile(build(Opt()))


def _batch(n_obj=4, with_pre=True):
  b, m = 2, 4
  batch = {'image': torch.randn(b, 3, 8, 8),
           'hm': torch.rand(b, 3, 8, 8) * 0.9,
           'ind': torch.randint(0, 64, (b, m)),
           'mask': (torch.arange(m) < n_obj).float().expand(b, m).contiguous(),
           'cat': torch.randint(0, 3, (b, m))}
  for head in ('reg', 'wh', 'tracking'):
    batch[head] = torch.randn(b, m, 2)
    batch[head + '_mask'] = batch['mask'].unsqueeze(2).expand(b, m, 2).contiguous()
  if with_pre:
    batch['pre_img'] = torch.randn(b, 3, 8, 8)
    batch['pre_hm'] = torch.rand(b, 1, 8, 8)
  return batch


def make():
  torch.manual_seed(0)
  return build(Opt()), [(_batch(),), (_batch(n_obj=0, with_pre=False),)]
