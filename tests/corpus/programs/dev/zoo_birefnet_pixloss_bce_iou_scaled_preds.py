"""BiRefNet PixLoss: per-scale interpolate + sigmoid, criterions dict (BCE, per-sample IoU loop).

Source: ZhengPeng7/BiRefNet@28ac099d3895b428ea9c4711ff8b9e5d743d5731:loss.py:38-93
Also: config.py@28ac099:31-39 (lambdas_pix_last: bce 1, iou 0.05, others 0) and
train.py@28ac099:150-160 (`loss_pix = pix_loss(scaled_preds, gts)`).
Kept: PixLoss building self.criterions_last from the lambdas dict, the
`pred_lvl.shape != gt.shape` interpolate branch, sigmoid, `loss += criterion(...) * lambda`
over criterions.items(); IoU_loss's Python loop over the batch; self.config = Config().
Simplified: Config keeps only the loss fields (the original reads go.sh in __init__);
the model is replaced by its output, a list of four logits maps at 1/8, 1/4, 1/2 and full size.
"""
import torch
from torch import nn


class Config():
    def __init__(self) -> None:
        self.lambdas_pix_last = {
            # not 0 means opening this loss
            'bce': 1 * 1,
            'iou': 0.05 * 1,
            'mse': 150 * 0,
            'triplet': 3 * 0,
            'reg': 100 * 0,
            'ssim': 1 * 0,
        }


class IoU_loss(torch.nn.Module):
    def __init__(self):
        super(IoU_loss, self).__init__()

    def forward(self, pred, target):
        b = pred.shape[0]
        IoU = 0.0
        for i in range(0, b):
            # compute the IoU of the foreground
            Iand1 = torch.sum(target[i, :, :, :] * pred[i, :, :, :])
            Ior1 = torch.sum(target[i, :, :, :]) + torch.sum(pred[i, :, :, :]) - Iand1
            IoU1 = Iand1 / Ior1
            # IoU loss is (1-IoU1)
            IoU = IoU + (1 - IoU1)
        # return IoU/b
        return IoU


class ThrReg_loss(torch.nn.Module):
    def __init__(self):
        super(ThrReg_loss, self).__init__()

    def forward(self, pred, gt=None):
        return torch.mean(1 - ((pred - 0) ** 2 + (pred - 1) ** 2))


class PixLoss(nn.Module):
    """
    IoU loss for outputs in [1:] scales.
    """
    def __init__(self):
        super(PixLoss, self).__init__()
        self.config = Config()
        self.lambdas_pix_last = self.config.lambdas_pix_last

        self.criterions_last = {}
        if 'bce' in self.lambdas_pix_last and self.lambdas_pix_last['bce']:
            self.criterions_last['bce'] = nn.BCELoss()
        if 'iou' in self.lambdas_pix_last and self.lambdas_pix_last['iou']:
            self.criterions_last['iou'] = IoU_loss()
        if 'mse' in self.lambdas_pix_last and self.lambdas_pix_last['mse']:
            self.criterions_last['mse'] = nn.MSELoss()
        if 'reg' in self.lambdas_pix_last and self.lambdas_pix_last['reg']:
            self.criterions_last['reg'] = ThrReg_loss()

    def forward(self, scaled_preds, gt):
        loss = 0
        for _, pred_lvl in enumerate(scaled_preds):
            if pred_lvl.shape != gt.shape:
                pred_lvl = nn.functional.interpolate(pred_lvl, size=gt.shape[2:], mode='bilinear', align_corners=True)
            pred_lvl = pred_lvl.sigmoid()
            for criterion_name, criterion in self.criterions_last.items():
                loss += criterion(pred_lvl, gt) * self.lambdas_pix_last[criterion_name]
        return loss


pix_loss = torch.compile(PixLoss())


def make():
    torch.manual_seed(0)
    gts = (torch.rand(2, 1, 32, 32) > 0.5).float()
    scaled_preds = [torch.randn(2, 1, s, s, requires_grad=True) for s in (4, 8, 16, 32)]
    return PixLoss(), [(scaled_preds, gts)]
