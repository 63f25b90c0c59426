"""timm RandomErasing: Python `random.uniform`/`random.randint` draws and `math` in a loop of up to 10 attempts per image.

Source: huggingface/pytorch-image-models@aa4b5850c1:timm/data/random_erasing.py:6-112
Kept: _get_pixels (per-pixel normal_, per-channel, or zeros), RandomErasing's
probability gate with `random.random() > self.probability`, the count draw,
the attempt loop (target area from random.uniform, log-aspect exp, the size
check, random.randint offsets, the slice assignment) and __call__ over the batch.
Simplified: mode 'pixel'; 2x3x8x8 batch.
"""
import math
import random

import torch


def _get_pixels(per_pixel, rand_color, patch_size, dtype=torch.float32, device="cpu"):
    if per_pixel:
        return torch.empty(patch_size, dtype=dtype, device=device).normal_()
    elif rand_color:
        return torch.empty((patch_size[0], 1, 1), dtype=dtype, device=device).normal_()
    else:
        return torch.zeros((patch_size[0], 1, 1), dtype=dtype, device=device)


class RandomErasing:
    def __init__(self, probability=0.5, min_area=0.02, max_area=1 / 3, min_aspect=0.3, max_aspect=None, mode="pixel", min_count=1, max_count=None):
        self.probability = probability
        self.min_area = min_area
        self.max_area = max_area
        max_aspect = max_aspect or 1 / min_aspect
        self.log_aspect_ratio = (math.log(min_aspect), math.log(max_aspect))
        self.min_count = min_count
        self.max_count = max_count or min_count
        self.per_pixel = mode == "pixel"
        self.rand_color = mode == "rand"

    def _erase(self, img, chan, img_h, img_w, dtype):
        if random.random() > self.probability:
            return
        area = img_h * img_w
        count = self.min_count if self.min_count == self.max_count else random.randint(self.min_count, self.max_count)
        for _ in range(count):
            for attempt in range(10):
                target_area = random.uniform(self.min_area, self.max_area) * area / count
                aspect_ratio = math.exp(random.uniform(*self.log_aspect_ratio))
                h = int(round(math.sqrt(target_area * aspect_ratio)))
                w = int(round(math.sqrt(target_area / aspect_ratio)))
                if w < img_w and h < img_h:
                    top = random.randint(0, img_h - h)
                    left = random.randint(0, img_w - w)
                    img[:, top:top + h, left:left + w] = _get_pixels(self.per_pixel, self.rand_color, (chan, h, w), dtype=dtype, device=img.device)
                    break

    def __call__(self, input):
        if len(input.size()) == 3:
            self._erase(input, *input.size(), input.dtype)
        else:
            batch_size, chan, img_h, img_w = input.size()
            for i in range(batch_size):
                self._erase(input[i], chan, img_h, img_w, input.dtype)
        return input


eraser = RandomErasing(probability=0.9)


@torch.compile
def augment_batch(images):
    return eraser(images.clone())


def make():
    return augment_batch._torchdynamo_orig_callable, [(torch.ones(2, 3, 8, 8),)]
