"""SegLossOdyssey generalized Dice: no_grad one-hot (or pass-through) target, einsum class weights.

Source: JunMa11/SegLossOdyssey@858c27e0eda817238b827d3972c198ec68f6cebf:losses_pytorch/dice_loss.py:12-18,84-127
Kept: GDiceLoss.forward as written (len(shp_x) != len(shp_y) view, the
all([...]) shape comparison choosing pass-through one-hot vs torch.zeros + scatter_,
the device.type == "cuda" check, the annotated einsum reductions) with
softmax_helper as apply_nonlin, as PenaltyGDiceLoss builds it.
Simplified: 2 x 3 classes x 4 x 4 x 4 volumes.
"""
import torch
from torch import nn
from torch import einsum


def softmax_helper(x):
    # copy from: https://github.com/MIC-DKFZ/nnUNet/blob/master/nnunet/utilities/nd_softmax.py
    rpt = [1 for _ in range(len(x.size()))]
    rpt[1] = x.size(1)
    x_max = x.max(1, keepdim=True)[0].repeat(*rpt)
    e_x = torch.exp(x - x_max)
    return e_x / e_x.sum(1, keepdim=True).repeat(*rpt)


class GDiceLoss(nn.Module):
    def __init__(self, apply_nonlin=None, smooth=1e-5):
        """
        Generalized Dice;
        Copy from: https://github.com/LIVIAETS/surface-loss/blob/108bd9892adca476e6cdf424124bc6268707498e/losses.py#L29
        paper: https://arxiv.org/pdf/1707.03237.pdf
        """
        super(GDiceLoss, self).__init__()

        self.apply_nonlin = apply_nonlin
        self.smooth = smooth

    def forward(self, net_output, gt):
        shp_x = net_output.shape # (batch size,class_num,x,y,z)
        shp_y = gt.shape # (batch size,1,x,y,z)
        # one hot code for gt
        with torch.no_grad():
            if len(shp_x) != len(shp_y):
                gt = gt.view((shp_y[0], 1, *shp_y[1:]))

            if all([i == j for i, j in zip(net_output.shape, gt.shape)]):
                # if this is the case then gt is probably already a one hot encoding
                y_onehot = gt
            else:
                gt = gt.long()
                y_onehot = torch.zeros(shp_x)
                if net_output.device.type == "cuda":
                    y_onehot = y_onehot.cuda(net_output.device.index)
                y_onehot.scatter_(1, gt, 1)


        if self.apply_nonlin is not None:
            softmax_output = self.apply_nonlin(net_output)

        # copy from https://github.com/LIVIAETS/surface-loss/blob/108bd9892adca476e6cdf424124bc6268707498e/losses.py#L29
        w: torch.Tensor = 1 / (einsum("bcxyz->bc", y_onehot).type(torch.float32) + 1e-10)**2
        intersection: torch.Tensor = w * einsum("bcxyz, bcxyz->bc", softmax_output, y_onehot)
        union: torch.Tensor = w * (einsum("bcxyz->bc", softmax_output) + einsum("bcxyz->bc", y_onehot))
        divided: torch.Tensor =  - 2 * (einsum("bc->b", intersection) + self.smooth) / (einsum("bc->b", union) + self.smooth)
        gdc = divided.mean()

        return gdc


class nnUNetTrainer_GDice:
    def initialize(self):
        self.loss = GDiceLoss(apply_nonlin=softmax_helper, smooth=1e-5)
        self.loss = torch.compile(self.loss)


def make():
    torch.manual_seed(0)
    loss = GDiceLoss(apply_nonlin=softmax_helper, smooth=1e-5)
    net_output = torch.randn(2, 3, 4, 4, 4)
    labels = torch.randint(0, 3, (2, 4, 4, 4))
    onehot = torch.nn.functional.one_hot(labels, 3).permute(0, 4, 1, 2, 3).float()
    return loss, [
        (net_output, labels[:, None].float()),   # label map with channel axis: scatter_ path
        (net_output, labels.float()),            # label map without channel axis: view first
        (net_output, onehot),                    # already one-hot: pass-through
    ]
