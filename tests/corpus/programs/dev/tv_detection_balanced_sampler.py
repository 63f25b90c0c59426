"""torchvision BalancedPositiveNegativeSampler: torch.where(cond)[0], numel() of it, randperm over it.

Source: pytorch/vision@v0.29.2:torchvision/models/detection/_utils.py:10-71
Kept: the class with batch_size_per_image/positive_fraction, the per-image
loop, the two `torch.where(...)[0]`, min(numel(), n), randperm, mask building.
Simplified: two images of 12 anchors.
"""
import torch
from torch import Tensor


class BalancedPositiveNegativeSampler:
    def __init__(self, batch_size_per_image: int, positive_fraction: float) -> None:
        self.batch_size_per_image = batch_size_per_image
        self.positive_fraction = positive_fraction

    def __call__(self, matched_idxs: list) -> tuple:
        pos_idx = []
        neg_idx = []
        for matched_idxs_per_image in matched_idxs:
            positive = torch.where(matched_idxs_per_image >= 1)[0]
            negative = torch.where(matched_idxs_per_image == 0)[0]

            num_pos = int(self.batch_size_per_image * self.positive_fraction)
            num_pos = min(positive.numel(), num_pos)
            num_neg = self.batch_size_per_image - num_pos
            num_neg = min(negative.numel(), num_neg)

            perm1 = torch.randperm(positive.numel(), device=positive.device)[:num_pos]
            perm2 = torch.randperm(negative.numel(), device=negative.device)[:num_neg]

            pos_idx_per_image = positive[perm1]
            neg_idx_per_image = negative[perm2]

            pos_idx_per_image_mask = torch.zeros_like(matched_idxs_per_image, dtype=torch.uint8)
            neg_idx_per_image_mask = torch.zeros_like(matched_idxs_per_image, dtype=torch.uint8)
            pos_idx_per_image_mask[pos_idx_per_image] = 1
            neg_idx_per_image_mask[neg_idx_per_image] = 1
            pos_idx.append(pos_idx_per_image_mask)
            neg_idx.append(neg_idx_per_image_mask)
        return pos_idx, neg_idx


sampler = BalancedPositiveNegativeSampler(batch_size_per_image=6, positive_fraction=0.25)


def sample(matched):
    return sampler([m for m in matched])


sample_compiled = torch.compile(sample)


def make():
    matched = torch.tensor([[2, 0, -1, 1, 0, 0, 3, -1, 0, 0, 1, 0], [0, 0, 0, -1, 0, 0, 0, 0, 1, 0, 0, 0]])
    return sample, [(matched,)]
