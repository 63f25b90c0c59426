"""torchvision.transforms.v2 MixUp: `float(self._dist.sample(()))` in make_params, roll/mul_/add_ mixing and one-hot label mixing.

Source: pytorch/vision@v0.29.2:torchvision/transforms/v2/_augment.py:180-265
Kept: _BaseMixUpCutMix's Beta distribution and one-hot label helper,
MixUp.make_params (float of a Beta sample) and transform (labels vs images,
`inpt.roll(1, 0).mul_(1.0 - lam).add_(inpt.mul(lam))`, the batch-size check).
Simplified: the flatten/unflatten input dispatch is replaced by an explicit
(images, labels) forward; 4 classes.
"""
import torch


class MixUp(torch.nn.Module):
    def __init__(self, *, alpha: float = 1.0, num_classes: int = 4):
        super().__init__()
        self.alpha = float(alpha)
        self._dist = torch.distributions.Beta(torch.tensor([alpha]), torch.tensor([alpha]))
        self.num_classes = num_classes

    def _check_image_or_video(self, inpt, *, batch_size: int):
        expected_num_dims = 4
        if inpt.ndim != expected_num_dims:
            raise ValueError(f"Expected a batched input with {expected_num_dims} dims, but got {inpt.ndim} dimensions instead.")
        if inpt.shape[0] != batch_size:
            raise ValueError(f"The batch size of the image or video does not match the batch size of the labels: {inpt.shape[0]} != {batch_size}.")

    def _mixup_label(self, label, *, lam: float):
        label = torch.nn.functional.one_hot(label, num_classes=self.num_classes)
        if not label.dtype.is_floating_point:
            label = label.float()
        return label.roll(1, 0).mul_(1.0 - lam).add_(label.mul(lam))

    def make_params(self, flat_inputs):
        return dict(lam=float(self._dist.sample(())))

    def forward(self, images, labels):
        params = self.make_params([images, labels])
        lam = params["lam"]
        self._check_image_or_video(images, batch_size=labels.shape[0])
        output = images.roll(1, 0).mul_(1.0 - lam).add_(images.mul(lam))
        return output, self._mixup_label(labels, lam=lam)


mixup = torch.compile(MixUp(num_classes=4))


def make():
    torch.manual_seed(0)
    return MixUp(num_classes=4), [(torch.rand(4, 3, 4, 4), torch.tensor([0, 1, 2, 3]))]
