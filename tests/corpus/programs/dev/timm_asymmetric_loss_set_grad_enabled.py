"""timm AsymmetricLossMultiLabel: asymmetric clipping, then `torch.set_grad_enabled(False)` / `(True)` around the focusing weight when disable_torch_grad_focal_loss is set (no break: Dynamo traces the grad-mode switches).

Source: huggingface/pytorch-image-models@aa4b5850c1:timm/loss/asymmetric_loss.py:1-49
Kept: the class verbatim (constructor flags, `if self.clip is not None and
self.clip > 0`, eps clamps, the gamma branch with the set_grad_enabled calls,
`loss *= one_sided_w`, `-loss.sum()`).
Simplified: 4 samples x 5 labels; the loss is compiled on its own as a
criterion, with and without the grad-disabling flag.
"""
import torch
import torch.nn as nn


class AsymmetricLossMultiLabel(nn.Module):
    def __init__(self, gamma_neg=4, gamma_pos=1, clip=0.05, eps=1e-8, disable_torch_grad_focal_loss=False):
        super(AsymmetricLossMultiLabel, self).__init__()

        self.gamma_neg = gamma_neg
        self.gamma_pos = gamma_pos
        self.clip = clip
        self.disable_torch_grad_focal_loss = disable_torch_grad_focal_loss
        self.eps = eps

    def forward(self, x, y):
        """"
        Parameters
        ----------
        x: input logits
        y: targets (multi-label binarized vector)
        """

        # Calculating Probabilities
        x_sigmoid = torch.sigmoid(x)
        xs_pos = x_sigmoid
        xs_neg = 1 - x_sigmoid

        # Asymmetric Clipping
        if self.clip is not None and self.clip > 0:
            xs_neg = (xs_neg + self.clip).clamp(max=1)

        # Basic CE calculation
        los_pos = y * torch.log(xs_pos.clamp(min=self.eps))
        los_neg = (1 - y) * torch.log(xs_neg.clamp(min=self.eps))
        loss = los_pos + los_neg

        # Asymmetric Focusing
        if self.gamma_neg > 0 or self.gamma_pos > 0:
            if self.disable_torch_grad_focal_loss:
                torch.set_grad_enabled(False)
            pt0 = xs_pos * y
            pt1 = xs_neg * (1 - y)  # pt = p if t > 0 else 1-p
            pt = pt0 + pt1
            one_sided_gamma = self.gamma_pos * y + self.gamma_neg * (1 - y)
            one_sided_w = torch.pow(1 - pt, one_sided_gamma)
            if self.disable_torch_grad_focal_loss:
                torch.set_grad_enabled(True)
            loss *= one_sided_w

        return -loss.sum()


train_loss_fn = torch.compile(AsymmetricLossMultiLabel(disable_torch_grad_focal_loss=True))


def make():
    torch.manual_seed(0)
    criteria = {
        "no_grad_focal": AsymmetricLossMultiLabel(disable_torch_grad_focal_loss=True),
        "plain": AsymmetricLossMultiLabel(),
    }
    x = torch.randn(4, 5)
    y = (torch.rand(4, 5) > 0.5).float()
    return (lambda logits, target, which: criteria[which](logits, target)), [
        (x, y, "no_grad_focal"),
        (x, y, "plain"),
    ]
