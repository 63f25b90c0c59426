"""Detic's federated sigmoid classification loss: `get_fed_loss_inds` takes `torch.unique(gt_classes)`, branches on `len(appeared) < num_sample_cats`, samples the missing categories with `torch.multinomial(prob, num_sample_cats - len(appeared))`, and the result indexes a mask.

Source: facebookresearch/Detic@436cda2a2347df60a7c66daca0e8c59f93dc5e79:detic/modeling/roi_heads/detic_fast_rcnn.py:197-228
Also: detic/modeling/utils.py:7-28 (load_class_freq, get_fed_loss_inds), the same file's
__init__ (freq_weight buffer, padding to num_classes) and losses() (use_sigmoid_ce dispatch).
Kept: sigmoid_cross_entropy_loss and get_fed_loss_inds verbatim, including the
numel()==0 shortcut, the ignore_zero_cats weight and the freq_weight buffer.
Simplified: the predictor keeps only the classification part of losses()
(scores and gt_classes in, loss_cls out); load_class_freq reads an in-memory
category list instead of the LVIS json; 6 categories, 5 sampled.
"""
import torch
from torch import nn
from torch.nn import functional as F

CAT_INFO = [
    {"id": 1, "image_count": 40}, {"id": 2, "image_count": 3},
    {"id": 3, "image_count": 0}, {"id": 4, "image_count": 12},
    {"id": 5, "image_count": 7}, {"id": 6, "image_count": 25},
]


def load_class_freq(cat_info=CAT_INFO, freq_weight=1.0):
    cat_info = torch.tensor(
        [c['image_count'] for c in sorted(cat_info, key=lambda x: x['id'])])
    freq_weight = cat_info.float() ** freq_weight
    return freq_weight


def get_fed_loss_inds(gt_classes, num_sample_cats, C, weight=None):
    appeared = torch.unique(gt_classes) # C'
    prob = appeared.new_ones(C + 1).float()
    prob[-1] = 0
    if len(appeared) < num_sample_cats:
        if weight is not None:
            prob[:C] = weight.float().clone()
        prob[appeared] = 0
        more_appeared = torch.multinomial(
            prob, num_sample_cats - len(appeared),
            replacement=False)
        appeared = torch.cat([appeared, more_appeared])
    return appeared


class DeticFastRCNNClsLoss(nn.Module):
    def __init__(self, num_classes=6, use_sigmoid_ce=True, use_fed_loss=True,
                 ignore_zero_cats=True, fed_loss_num_cat=5, fed_loss_freq_weight=0.5):
        super().__init__()
        self.num_classes = num_classes
        self.use_sigmoid_ce = use_sigmoid_ce
        self.use_fed_loss = use_fed_loss
        self.ignore_zero_cats = ignore_zero_cats
        self.fed_loss_num_cat = fed_loss_num_cat
        if self.use_fed_loss or self.ignore_zero_cats:
            freq_weight = load_class_freq(CAT_INFO, fed_loss_freq_weight)
            self.register_buffer('freq_weight', freq_weight)
        else:
            self.freq_weight = None

        if self.use_fed_loss and len(self.freq_weight) < self.num_classes:
            self.freq_weight = torch.cat(
                [self.freq_weight,
                 self.freq_weight.new_zeros(
                     self.num_classes - len(self.freq_weight))]
            )

    def forward(self, scores, gt_classes):
        if self.use_sigmoid_ce:
            loss_cls = self.sigmoid_cross_entropy_loss(scores, gt_classes)
        else:
            loss_cls = F.cross_entropy(scores, gt_classes, reduction="mean")
        return {"loss_cls": loss_cls}

    def sigmoid_cross_entropy_loss(self, pred_class_logits, gt_classes):
        if pred_class_logits.numel() == 0:
            return pred_class_logits.new_zeros([1])[0] # This is more robust than .sum() * 0.

        B = pred_class_logits.shape[0]
        C = pred_class_logits.shape[1] - 1

        target = pred_class_logits.new_zeros(B, C + 1)
        target[range(len(gt_classes)), gt_classes] = 1 # B x (C + 1)
        target = target[:, :C] # B x C

        weight = 1

        if self.use_fed_loss and (self.freq_weight is not None): # fedloss
            appeared = get_fed_loss_inds(
                gt_classes,
                num_sample_cats=self.fed_loss_num_cat,
                C=C,
                weight=self.freq_weight)
            appeared_mask = appeared.new_zeros(C + 1)
            appeared_mask[appeared] = 1 # C + 1
            appeared_mask = appeared_mask[:C]
            fed_w = appeared_mask.view(1, C).expand(B, C)
            weight = weight * fed_w.float()
        if self.ignore_zero_cats and (self.freq_weight is not None):
            w = (self.freq_weight.view(-1) > 1e-4).float()
            weight = weight * w.view(1, C).expand(B, C)
            # import pdb; pdb.set_trace()

        cls_loss = F.binary_cross_entropy_with_logits(
            pred_class_logits[:, :-1], target, reduction='none') # B x C
        loss =  torch.sum(cls_loss * weight) / B
        return loss


box_predictor_loss = torch.compile(DeticFastRCNNClsLoss())


def make():
    torch.manual_seed(0)
    scores = torch.randn(6, 7)
    few_classes = torch.tensor([0, 0, 6, 6, 3, 6])
    many_classes = torch.tensor([0, 1, 2, 3, 4, 5])
    return DeticFastRCNNClsLoss(), [
        (scores, few_classes),
        (scores, many_classes),
        (scores[:0], few_classes[:0]),
    ]
