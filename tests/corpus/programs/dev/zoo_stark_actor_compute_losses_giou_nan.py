"""STARK-S actor loss: NaN guard that raises, GIoU behind try/except with degenerate-box asserts, L1, `.item()` status dict.

Source: researchmm/Stark@162e1d3:lib/train/actors/stark_s.py:8-80
Also: lib/utils/box_ops.py (box_cxcywh_to_xyxy, box_xywh_to_xyxy, box_iou, generalized_box_iou,
giou_loss), same commit; the objective dict {'giou': giou_loss, 'l1': l1_loss} and loss_weight as built
in lib/train/train_script.py.
Kept: STARKSActor.compute_losses verbatim (torch.isnan(...).any() -> ValueError, num_queries from
size(1), gt repeat/view/clamp, try/except around the GIoU objective with a `.cuda()` fallback,
weighted sum, status dict of `.item()` values, return_status flag), the box_ops functions with their
`.all()` asserts.
Simplified: torchvision's box_area is written inline (same formula); the forward pass is not run,
predicted boxes come in as a tensor; the bound method is what gets compiled.
"""
import torch
import torch.nn as nn


def box_area(boxes):
    return (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])


def box_cxcywh_to_xyxy(x):
    x_c, y_c, w, h = x.unbind(-1)
    b = [(x_c - 0.5 * w), (y_c - 0.5 * h),
         (x_c + 0.5 * w), (y_c + 0.5 * h)]
    return torch.stack(b, dim=-1)


def box_xywh_to_xyxy(x):
    x1, y1, w, h = x.unbind(-1)
    b = [x1, y1, x1 + w, y1 + h]
    return torch.stack(b, dim=-1)


def box_iou(boxes1, boxes2):
    """

    :param boxes1: (N, 4) (x1,y1,x2,y2)
    :param boxes2: (N, 4) (x1,y1,x2,y2)
    :return:
    """
    area1 = box_area(boxes1)  # (N,)
    area2 = box_area(boxes2)  # (N,)

    lt = torch.max(boxes1[:, :2], boxes2[:, :2])  # (N,2)
    rb = torch.min(boxes1[:, 2:], boxes2[:, 2:])  # (N,2)

    wh = (rb - lt).clamp(min=0)  # (N,2)
    inter = wh[:, 0] * wh[:, 1]  # (N,)

    union = area1 + area2 - inter

    iou = inter / union
    return iou, union


def generalized_box_iou(boxes1, boxes2):
    # degenerate boxes gives inf / nan results
    # so do an early check
    # try:
    assert (boxes1[:, 2:] >= boxes1[:, :2]).all()
    assert (boxes2[:, 2:] >= boxes2[:, :2]).all()
    iou, union = box_iou(boxes1, boxes2)  # (N,)

    lt = torch.min(boxes1[:, :2], boxes2[:, :2])
    rb = torch.max(boxes1[:, 2:], boxes2[:, 2:])

    wh = (rb - lt).clamp(min=0)  # (N,2)
    area = wh[:, 0] * wh[:, 1]  # (N,)

    return iou - (area - union) / area, iou


def giou_loss(boxes1, boxes2):
    giou, iou = generalized_box_iou(boxes1, boxes2)
    return (1 - giou).mean(), iou


class BaseActor:
    def __init__(self, net, objective):
        self.net = net
        self.objective = objective


class Settings:
    batchsize = 4
    num_template = 1


class STARKSActor(BaseActor):
    """ Actor for training the STARK-S and STARK-ST(Stage1)"""
    def __init__(self, net, objective, loss_weight, settings):
        super().__init__(net, objective)
        self.loss_weight = loss_weight
        self.settings = settings
        self.bs = self.settings.batchsize  # batch size

    def compute_losses(self, pred_dict, gt_bbox, return_status=True):
        # Get boxes
        pred_boxes = pred_dict['pred_boxes']
        if torch.isnan(pred_boxes).any():
            raise ValueError("Network outputs is NAN! Stop Training")
        num_queries = pred_boxes.size(1)
        pred_boxes_vec = box_cxcywh_to_xyxy(pred_boxes).view(-1, 4)  # (B,N,4) --> (BN,4) (x1,y1,x2,y2)
        gt_boxes_vec = box_xywh_to_xyxy(gt_bbox)[:, None, :].repeat((1, num_queries, 1)).view(-1, 4).clamp(min=0.0, max=1.0)  # (B,4) --> (B,1,4) --> (B,N,4)
        # compute giou and iou
        try:
            giou_loss, iou = self.objective['giou'](pred_boxes_vec, gt_boxes_vec)  # (BN,4) (BN,4)
        except:
            giou_loss, iou = torch.tensor(0.0).cuda(), torch.tensor(0.0).cuda()
        # compute l1 loss
        l1_loss = self.objective['l1'](pred_boxes_vec, gt_boxes_vec)  # (BN,4) (BN,4)
        # weighted sum
        loss = self.loss_weight['giou'] * giou_loss + self.loss_weight['l1'] * l1_loss
        if return_status:
            # status for log
            mean_iou = iou.detach().mean()
            status = {"Loss/total": loss.item(),
                      "Loss/giou": giou_loss.item(),
                      "Loss/l1": l1_loss.item(),
                      "IoU": mean_iou.item()}
            return loss, status
        else:
            return loss


def build_actor():
    objective = {'giou': giou_loss, 'l1': nn.L1Loss()}
    loss_weight = {'giou': 2.0, 'l1': 5.0}
    return STARKSActor(net=None, objective=objective, loss_weight=loss_weight, settings=Settings())


actor = build_actor()
compute_losses = torch.compile(actor.compute_losses)

RAISING_INPUTS = {2: "ValueError"}


def make():
    torch.manual_seed(0)
    a = build_actor()
    pred = torch.rand(4, 1, 4) * 0.5 + 0.25
    pred.requires_grad_(True)
    gt = torch.rand(4, 4) * 0.4
    nan_pred = pred.detach().clone()
    nan_pred[1, 0, 2] = float('nan')
    return a.compute_losses, [
        ({'pred_boxes': pred}, gt),
        ({'pred_boxes': pred}, gt, False),
        ({'pred_boxes': nan_pred}, gt),
    ]
