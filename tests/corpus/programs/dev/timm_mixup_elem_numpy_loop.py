"""timm Mixup in 'elem' mode inside a compiled step: per-element numpy lambdas, a Python loop with `if lam != 1.` on numpy floats, torch.tensor of the list.

Source: huggingface/pytorch-image-models@aa4b5850c1:timm/data/mixup.py:118-180
Kept: _params_per_elem (np.ones/np.random.rand/np.where/np.random.beta and
astype), _mix_elem (clone, the per-element loop, cutmix box vs blend by
use_cutmix[i], `torch.tensor(lam_batch, device=..., dtype=...).unsqueeze(1)`),
and mixup_target.
Simplified: cutmix_alpha 0 (mixup only); batch 4 of 3x4x4.
"""
import numpy as np
import torch


def one_hot(x, num_classes, on_value=1., off_value=0.):
    x = x.long().view(-1, 1)
    return torch.full((x.size()[0], num_classes), off_value, device=x.device).scatter_(1, x, on_value)


def mixup_target(target, num_classes, lam=1., smoothing=0.0):
    off_value = smoothing / num_classes
    on_value = 1. - smoothing + off_value
    y1 = one_hot(target, num_classes, on_value=on_value, off_value=off_value)
    y2 = one_hot(target.flip(0), num_classes, on_value=on_value, off_value=off_value)
    return y1 * lam + y2 * (1. - lam)


class Mixup:
    def __init__(self, mixup_alpha=1., prob=1.0, num_classes=4):
        self.mixup_alpha = mixup_alpha
        self.cutmix_alpha = 0.
        self.mix_prob = prob
        self.num_classes = num_classes
        self.mixup_enabled = True

    def _params_per_elem(self, batch_size):
        lam = np.ones(batch_size, dtype=np.float32)
        use_cutmix = np.zeros(batch_size, dtype=bool)
        if self.mixup_enabled:
            if self.mixup_alpha > 0.:
                lam_mix = np.random.beta(self.mixup_alpha, self.mixup_alpha, size=batch_size)
            else:
                raise NotImplementedError
            lam = np.where(np.random.rand(batch_size) < self.mix_prob, lam_mix.astype(np.float32), lam)
        return lam, use_cutmix

    def _mix_elem(self, x):
        batch_size = len(x)
        lam_batch, use_cutmix = self._params_per_elem(batch_size)
        x_orig = x.clone()
        for i in range(batch_size):
            j = batch_size - i - 1
            lam = lam_batch[i]
            if lam != 1.:
                if use_cutmix[i]:
                    raise NotImplementedError
                else:
                    x[i] = x[i] * lam + x_orig[j] * (1 - lam)
        return torch.tensor(lam_batch, device=x.device, dtype=x.dtype).unsqueeze(1)

    def __call__(self, x, target):
        assert len(x) % 2 == 0, 'Batch size should be even when using this'
        lam = self._mix_elem(x)
        return x, mixup_target(target, self.num_classes, lam)


mixup_fn = Mixup()


@torch.compile
def mix(images, labels):
    return mixup_fn(images.clone(), labels)


def make():
    torch.manual_seed(0)
    return mix._torchdynamo_orig_callable, [(torch.rand(4, 3, 4, 4), torch.tensor([0, 1, 2, 3]))]
