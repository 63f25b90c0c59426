"""torchvision.transforms.v2 CutMix: `float(self._dist.sample(()))` and `int(torch.clamp(...))` for the box.

Source: pytorch/vision@v0.29.2:torchvision/transforms/v2/_augment.py:268-334
Kept: make_params (Beta sample to float, randint centre, the int(clamp) box,
lam_adjusted) and the transform that pastes the rolled batch and mixes labels.
Simplified: the _BaseMixUpCutMix dispatch and tv_tensors wrapping are dropped;
one-hot labels are built inline.
"""
import math

import torch


class CutMix(torch.nn.Module):
    def __init__(self, *, alpha: float = 1.0, num_classes: int = 4):
        super().__init__()
        self.alpha = float(alpha)
        self._dist = torch.distributions.Beta(torch.tensor([alpha]), torch.tensor([alpha]))
        self.num_classes = num_classes

    def make_params(self, images):
        lam = float(self._dist.sample(()))
        H, W = images.shape[-2:]
        r_x = torch.randint(W, size=(1,))
        r_y = torch.randint(H, size=(1,))
        r = 0.5 * math.sqrt(1.0 - lam)
        r_w_half = int(r * W)
        r_h_half = int(r * H)
        x1 = int(torch.clamp(r_x - r_w_half, min=0))
        y1 = int(torch.clamp(r_y - r_h_half, min=0))
        x2 = int(torch.clamp(r_x + r_w_half, max=W))
        y2 = int(torch.clamp(r_y + r_h_half, max=H))
        box = (x1, y1, x2, y2)
        lam_adjusted = float(1.0 - (x2 - x1) * (y2 - y1) / (W * H))
        return dict(box=box, lam_adjusted=lam_adjusted)

    def forward(self, images, labels):
        params = self.make_params(images)
        x1, y1, x2, y2 = params["box"]
        rolled = images.roll(1, 0)
        output = images.clone()
        output[..., y1:y2, x1:x2] = rolled[..., y1:y2, x1:x2]
        one_hot = torch.nn.functional.one_hot(labels, num_classes=self.num_classes).float()
        mixed = one_hot.roll(1, 0).mul_(1.0 - params["lam_adjusted"]).add_(one_hot.mul(params["lam_adjusted"]))
        return output, mixed


cutmix = torch.compile(CutMix(num_classes=4))


def make():
    torch.manual_seed(0)
    return CutMix(num_classes=4), [(torch.rand(4, 3, 8, 8), torch.tensor([0, 1, 2, 3]))]
