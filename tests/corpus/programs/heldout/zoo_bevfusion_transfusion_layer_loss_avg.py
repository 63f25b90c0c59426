"""BEVFusion TransFusion head loss: the heatmap loss's `avg_factor=max(heatmap.eq(1).float().sum().item(), 1)`, and per decoder layer `avg_factor=max(num_pos, 1)` with num_pos from the assigner (the `hasattr(self, "on_the_image_mask")` camera branch is kept but not configured here).

Source: mit-han-lab/bevfusion@326653dc06e0938edf1aae7d01efcd158ba83de5:mmdet3d/models/heads/bbox/transfusion.py:588-713
Kept: TransFusionHead.loss verbatim.
Simplified: get_targets (Hungarian assignment, gaussian heatmaps) returns targets handed in
with the ground truth, so `gt_bboxes_3d` carries the target tuple; clip_sigmoid and mmdet's
GaussianFocalLoss, FocalLoss (the PyTorch sigmoid focal loss) and L1Loss with
weight_reduce_loss are re-typed; 3 classes, 2 decoder layers of 4 proposals, 8x8 heatmap.
"""
import torch
import torch.nn.functional as F
from torch import nn


def clip_sigmoid(x, eps=1e-4):
    y = torch.clamp(x.sigmoid_(), min=eps, max=1 - eps)
    return y


def reduce_loss(loss, reduction):
    if reduction == 'none':
        return loss
    elif reduction == 'mean':
        return loss.mean()
    return loss.sum()


def weight_reduce_loss(loss, weight=None, reduction='mean', avg_factor=None):
    if weight is not None:
        loss = loss * weight
    if avg_factor is None:
        loss = reduce_loss(loss, reduction)
    else:
        if reduction == 'mean':
            eps = torch.finfo(torch.float32).eps
            loss = loss.sum() / (avg_factor + eps)
        elif reduction != 'none':
            raise ValueError('avg_factor can not be used with reduction="sum"')
    return loss


class GaussianFocalLoss(nn.Module):
    def __init__(self, alpha=2.0, gamma=4.0, reduction='mean', loss_weight=1.0):
        super().__init__()
        self.alpha = alpha
        self.gamma = gamma
        self.reduction = reduction
        self.loss_weight = loss_weight

    def forward(self, pred, target, weight=None, avg_factor=None):
        eps = 1e-12
        pos_weights = target.eq(1)
        neg_weights = (1 - target).pow(self.gamma)
        pos_loss = -(pred + eps).log() * (1 - pred).pow(self.alpha) * pos_weights
        neg_loss = -(1 - pred + eps).log() * pred.pow(self.alpha) * neg_weights
        loss = weight_reduce_loss(pos_loss + neg_loss, weight, self.reduction, avg_factor)
        return self.loss_weight * loss


class FocalLoss(nn.Module):
    def __init__(self, use_sigmoid=True, gamma=2.0, alpha=0.25, reduction='mean', loss_weight=1.0):
        super().__init__()
        self.gamma = gamma
        self.alpha = alpha
        self.reduction = reduction
        self.loss_weight = loss_weight

    def forward(self, pred, target, weight=None, avg_factor=None):
        num_classes = pred.size(1)
        target = F.one_hot(target, num_classes=num_classes + 1)
        target = target[:, :num_classes]
        pred_sigmoid = pred.sigmoid()
        target = target.type_as(pred)
        pt = (1 - pred_sigmoid) * target + pred_sigmoid * (1 - target)
        focal_weight = (self.alpha * target + (1 - self.alpha) *
                        (1 - target)) * pt.pow(self.gamma)
        loss = F.binary_cross_entropy_with_logits(
            pred, target, reduction='none') * focal_weight
        if weight is not None:
            weight = weight.view(-1, 1)
        return self.loss_weight * weight_reduce_loss(loss, weight, self.reduction, avg_factor)


class L1Loss(nn.Module):
    def __init__(self, reduction='mean', loss_weight=1.0):
        super().__init__()
        self.reduction = reduction
        self.loss_weight = loss_weight

    def forward(self, pred, target, weight=None, avg_factor=None):
        loss = torch.abs(pred - target)
        return self.loss_weight * weight_reduce_loss(loss, weight, self.reduction, avg_factor)


class TransFusionHead(nn.Module):
    def __init__(self, num_classes=3, num_proposals=4, num_decoder_layers=2, auxiliary=True,
                 train_cfg=None):
        super().__init__()
        self.num_classes = num_classes
        self.num_proposals = num_proposals
        self.num_decoder_layers = num_decoder_layers
        self.auxiliary = auxiliary
        self.train_cfg = train_cfg
        self.loss_cls = FocalLoss(use_sigmoid=True, gamma=2.0, alpha=0.25, reduction='mean', loss_weight=1.0)
        self.loss_bbox = L1Loss(reduction='mean', loss_weight=0.25)
        self.loss_heatmap = GaussianFocalLoss(reduction='mean', loss_weight=1.0)

    def get_targets(self, gt_bboxes_3d, gt_labels_3d, preds_dict):
        # assignment and heatmap rendering are precomputed (see module docstring)
        return gt_bboxes_3d

    def forward(self, gt_bboxes_3d, gt_labels_3d, preds_dicts):
        return self.loss(gt_bboxes_3d, gt_labels_3d, preds_dicts)

    def loss(self, gt_bboxes_3d, gt_labels_3d, preds_dicts, **kwargs):
        """Loss function for CenterHead.
        Args:
            gt_bboxes_3d (list[:obj:`LiDARInstance3DBoxes`]): Ground
                truth gt boxes.
            gt_labels_3d (list[torch.Tensor]): Labels of boxes.
            preds_dicts (list[list[dict]]): Output of forward function.
        Returns:
            dict[str:torch.Tensor]: Loss of heatmap and bbox of each task.
        """
        (
            labels,
            label_weights,
            bbox_targets,
            bbox_weights,
            ious,
            num_pos,
            matched_ious,
            heatmap,
        ) = self.get_targets(gt_bboxes_3d, gt_labels_3d, preds_dicts[0])
        if hasattr(self, "on_the_image_mask"):
            label_weights = label_weights * self.on_the_image_mask
            bbox_weights = bbox_weights * self.on_the_image_mask[:, :, None]
            num_pos = bbox_weights.max(-1).values.sum()
        preds_dict = preds_dicts[0][0]
        loss_dict = dict()

        # compute heatmap loss
        loss_heatmap = self.loss_heatmap(
            clip_sigmoid(preds_dict["dense_heatmap"]),
            heatmap,
            avg_factor=max(heatmap.eq(1).float().sum().item(), 1),
        )
        loss_dict["loss_heatmap"] = loss_heatmap

        # compute loss for each layer
        for idx_layer in range(self.num_decoder_layers if self.auxiliary else 1):
            if idx_layer == self.num_decoder_layers - 1 or (
                idx_layer == 0 and self.auxiliary is False
            ):
                prefix = "layer_-1"
            else:
                prefix = f"layer_{idx_layer}"

            layer_labels = labels[
                ...,
                idx_layer * self.num_proposals : (idx_layer + 1) * self.num_proposals,
            ].reshape(-1)
            layer_label_weights = label_weights[
                ...,
                idx_layer * self.num_proposals : (idx_layer + 1) * self.num_proposals,
            ].reshape(-1)
            layer_score = preds_dict["heatmap"][
                ...,
                idx_layer * self.num_proposals : (idx_layer + 1) * self.num_proposals,
            ]
            layer_cls_score = layer_score.permute(0, 2, 1).reshape(-1, self.num_classes)
            layer_loss_cls = self.loss_cls(
                layer_cls_score,
                layer_labels,
                layer_label_weights,
                avg_factor=max(num_pos, 1),
            )

            layer_center = preds_dict["center"][
                ...,
                idx_layer * self.num_proposals : (idx_layer + 1) * self.num_proposals,
            ]
            layer_height = preds_dict["height"][
                ...,
                idx_layer * self.num_proposals : (idx_layer + 1) * self.num_proposals,
            ]
            layer_rot = preds_dict["rot"][
                ...,
                idx_layer * self.num_proposals : (idx_layer + 1) * self.num_proposals,
            ]
            layer_dim = preds_dict["dim"][
                ...,
                idx_layer * self.num_proposals : (idx_layer + 1) * self.num_proposals,
            ]
            preds = torch.cat(
                [layer_center, layer_height, layer_dim, layer_rot], dim=1
            ).permute(
                0, 2, 1
            )  # [BS, num_proposals, code_size]
            if "vel" in preds_dict.keys():
                layer_vel = preds_dict["vel"][
                    ...,
                    idx_layer
                    * self.num_proposals : (idx_layer + 1)
                    * self.num_proposals,
                ]
                preds = torch.cat(
                    [layer_center, layer_height, layer_dim, layer_rot, layer_vel], dim=1
                ).permute(
                    0, 2, 1
                )  # [BS, num_proposals, code_size]
            code_weights = self.train_cfg.get("code_weights", None)
            layer_bbox_weights = bbox_weights[
                :,
                idx_layer * self.num_proposals : (idx_layer + 1) * self.num_proposals,
                :,
            ]
            layer_reg_weights = layer_bbox_weights * layer_bbox_weights.new_tensor(
                code_weights
            )
            layer_bbox_targets = bbox_targets[
                :,
                idx_layer * self.num_proposals : (idx_layer + 1) * self.num_proposals,
                :,
            ]
            layer_loss_bbox = self.loss_bbox(
                preds, layer_bbox_targets, layer_reg_weights, avg_factor=max(num_pos, 1)
            )

            # layer_iou = preds_dict['iou'][..., idx_layer*self.num_proposals:(idx_layer+1)*self.num_proposals].squeeze(1)
            # layer_iou_target = ious[..., idx_layer*self.num_proposals:(idx_layer+1)*self.num_proposals]
            # layer_loss_iou = self.loss_iou(layer_iou, layer_iou_target, layer_bbox_weights.max(-1).values, avg_factor=max(num_pos, 1))

            loss_dict[f"{prefix}_loss_cls"] = layer_loss_cls
            loss_dict[f"{prefix}_loss_bbox"] = layer_loss_bbox
            # loss_dict[f'{prefix}_loss_iou'] = layer_loss_iou

        loss_dict[f"matched_ious"] = layer_loss_cls.new_tensor(matched_ious)

        return loss_dict


def build_head(on_the_image_mask=None):
    head = TransFusionHead(train_cfg=dict(code_weights=[1.0] * 8 + [0.2, 0.2]))
    if on_the_image_mask is not None:
        head.on_the_image_mask = on_the_image_mask
    return head


def train_step(head, targets, preds_dicts):
    compiled = torch.compile(head.train())
    losses = compiled(targets, None, preds_dicts)
    return sum(v for k, v in losses.items() if 'loss' in k)


def _case(num_pos, peaks):
    bs, P, L = 1, 4, 2
    labels = torch.tensor([[0, 1, 3, 2, 3, 0, 1, 3]])
    label_weights = torch.ones(bs, P * L)
    bbox_targets = torch.randn(bs, P * L, 10)
    bbox_weights = torch.zeros(bs, P * L, 10)
    bbox_weights[:, :num_pos] = 1.0
    ious = torch.rand(bs, P * L)
    heatmap = torch.zeros(bs, 3, 8, 8)
    for c, y, x in peaks:
        heatmap[0, c, y, x] = 1.0
    targets = (labels, label_weights, bbox_targets, bbox_weights, ious, num_pos, 0.5, heatmap)
    preds = [[dict(dense_heatmap=torch.randn(bs, 3, 8, 8), heatmap=torch.randn(bs, 3, P * L),
                   center=torch.randn(bs, 2, P * L), height=torch.randn(bs, 1, P * L),
                   dim=torch.randn(bs, 3, P * L), rot=torch.randn(bs, 2, P * L),
                   vel=torch.randn(bs, 2, P * L))]]
    return targets, None, preds


def make():
    torch.manual_seed(0)
    head = build_head().train()
    return head, [_case(3, [(0, 1, 1), (2, 5, 6)]), _case(0, [])]
