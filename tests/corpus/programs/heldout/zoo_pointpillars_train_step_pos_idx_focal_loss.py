"""PointPillars training step after the forward: boolean positive-anchor selection, sin/cos angle rewrite on clones, in-place label fix-up, focal/smooth-L1/CE loss.

Source: zhulf0804/PointPillars@620e6b0d07e4cb37b7b0114f26b934e8be92a0ba:train.py:70-113
Kept: the train loop body between the model forward and loss.backward()
verbatim (permute/reshape of the head outputs, reading the
anchor_target_dict, pos_idx masking, the sin/cos rewrite of the last box
column using .clone(), num_cls_pos as a tensor sum,
`batched_bbox_labels[batched_bbox_labels < 0] = args.nclasses`, the weight
mask selections, loss_func(**...) and loss.backward()); Loss from
pointpillars/loss/loss.py verbatim (one_hot, focal weights, BCE,
SmoothL1Loss(reduction='none'), CrossEntropyLoss, the loss dict).
Simplified: the model forward and anchor targets are given as inputs
(2 anchors x 3 classes on a 4x4 map); args is a namespace with nclasses.
"""
import types

import torch
import torch.nn as nn
import torch.nn.functional as F


class Loss(nn.Module):
    def __init__(self, alpha=0.25, gamma=2.0, beta=1/9, cls_w=1.0, reg_w=2.0, dir_w=0.2):
        super().__init__()
        self.alpha = 0.25
        self.gamma = 2.0
        self.cls_w = cls_w
        self.reg_w = reg_w
        self.dir_w = dir_w
        self.smooth_l1_loss = nn.SmoothL1Loss(reduction='none',
                                              beta=beta)
        self.dir_cls = nn.CrossEntropyLoss()

    def forward(self,
                bbox_cls_pred,
                bbox_pred,
                bbox_dir_cls_pred,
                batched_labels,
                num_cls_pos,
                batched_bbox_reg,
                batched_dir_labels):
        # 1. bbox cls loss
        nclasses = bbox_cls_pred.size(1)
        batched_labels = F.one_hot(batched_labels, nclasses + 1)[:, :nclasses].float() # (n, 3)

        bbox_cls_pred_sigmoid = torch.sigmoid(bbox_cls_pred)
        weights = self.alpha * (1 - bbox_cls_pred_sigmoid).pow(self.gamma) * batched_labels + \
             (1 - self.alpha) * bbox_cls_pred_sigmoid.pow(self.gamma) * (1 - batched_labels) # (n, 3)
        cls_loss = F.binary_cross_entropy(bbox_cls_pred_sigmoid, batched_labels, reduction='none')
        cls_loss = cls_loss * weights
        cls_loss = cls_loss.sum() / num_cls_pos

        # 2. regression loss
        reg_loss = self.smooth_l1_loss(bbox_pred, batched_bbox_reg)
        reg_loss = reg_loss.sum() / reg_loss.size(0)

        # 3. direction cls loss
        dir_cls_loss = self.dir_cls(bbox_dir_cls_pred, batched_dir_labels)

        # 4. total loss
        total_loss = self.cls_w * cls_loss + self.reg_w * reg_loss + self.dir_w * dir_cls_loss

        loss_dict={'cls_loss': cls_loss,
                   'reg_loss': reg_loss,
                   'dir_cls_loss': dir_cls_loss,
                   'total_loss': total_loss}
        return loss_dict


args = types.SimpleNamespace(nclasses=3)
loss_func = Loss()


@torch.compile
def train_step_loss(bbox_cls_pred, bbox_pred, bbox_dir_cls_pred, anchor_target_dict):
    bbox_cls_pred = bbox_cls_pred.permute(0, 2, 3, 1).reshape(-1, args.nclasses)
    bbox_pred = bbox_pred.permute(0, 2, 3, 1).reshape(-1, 7)
    bbox_dir_cls_pred = bbox_dir_cls_pred.permute(0, 2, 3, 1).reshape(-1, 2)

    batched_bbox_labels = anchor_target_dict['batched_labels'].reshape(-1)
    batched_label_weights = anchor_target_dict['batched_label_weights'].reshape(-1)
    batched_bbox_reg = anchor_target_dict['batched_bbox_reg'].reshape(-1, 7)
    # batched_bbox_reg_weights = anchor_target_dict['batched_bbox_reg_weights'].reshape(-1)
    batched_dir_labels = anchor_target_dict['batched_dir_labels'].reshape(-1)
    # batched_dir_labels_weights = anchor_target_dict['batched_dir_labels_weights'].reshape(-1)

    pos_idx = (batched_bbox_labels >= 0) & (batched_bbox_labels < args.nclasses)
    bbox_pred = bbox_pred[pos_idx]
    batched_bbox_reg = batched_bbox_reg[pos_idx]
    # sin(a - b) = sin(a)*cos(b) - cos(a)*sin(b)
    bbox_pred[:, -1] = torch.sin(bbox_pred[:, -1].clone()) * torch.cos(batched_bbox_reg[:, -1].clone())
    batched_bbox_reg[:, -1] = torch.cos(bbox_pred[:, -1].clone()) * torch.sin(batched_bbox_reg[:, -1].clone())
    bbox_dir_cls_pred = bbox_dir_cls_pred[pos_idx]
    batched_dir_labels = batched_dir_labels[pos_idx]

    num_cls_pos = (batched_bbox_labels < args.nclasses).sum()
    bbox_cls_pred = bbox_cls_pred[batched_label_weights > 0]
    batched_bbox_labels[batched_bbox_labels < 0] = args.nclasses
    batched_bbox_labels = batched_bbox_labels[batched_label_weights > 0]

    loss_dict = loss_func(bbox_cls_pred=bbox_cls_pred,
                          bbox_pred=bbox_pred,
                          bbox_dir_cls_pred=bbox_dir_cls_pred,
                          batched_labels=batched_bbox_labels,
                          num_cls_pos=num_cls_pos,
                          batched_bbox_reg=batched_bbox_reg,
                          batched_dir_labels=batched_dir_labels)

    loss = loss_dict['total_loss']
    loss.backward()
    return loss_dict


def make():
    torch.manual_seed(0)
    n_anchors, H, W = 6, 4, 4
    n = n_anchors * H * W
    bbox_cls_pred = torch.randn(1, n_anchors * 3, H, W, requires_grad=True)
    bbox_pred = torch.randn(1, n_anchors * 7, H, W, requires_grad=True)
    bbox_dir_cls_pred = torch.randn(1, n_anchors * 2, H, W, requires_grad=True)
    labels = torch.full((1, n), 3, dtype=torch.long)
    labels[0, :5] = torch.tensor([0, 1, 2, 1, 0])
    labels[0, 5:9] = -1
    weights = torch.ones(1, n)
    weights[0, 5:9] = 0.0
    anchor_target_dict = {
        'batched_labels': labels,
        'batched_label_weights': weights,
        'batched_bbox_reg': torch.randn(1, n, 7),
        'batched_dir_labels': torch.randint(0, 2, (1, n)),
    }
    return train_step_loss._torchdynamo_orig_callable, [
        (bbox_cls_pred, bbox_pred, bbox_dir_cls_pred, anchor_target_dict),
    ]
