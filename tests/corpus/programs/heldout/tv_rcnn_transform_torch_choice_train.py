"""torchvision GeneralizedRCNNTransform in training: `torch_choice` picks a min size with `int(torch.empty(1).uniform_(...).item())`.

Source: pytorch/vision@v0.29.2:torchvision/models/detection/transform.py:88-255
Kept: forward (list copies, the per-image 3-D ValueError, normalize, resize,
image sizes with their torch._assert), normalize (float check, as_tensor
mean/std), torch_choice, resize (the self.training switch between torch_choice
and the last min size, the box rescale), resize_boxes and batch_images'
size_divisible padding.
Simplified: _resize_image_and_masks is the eager Python-min scale path;
ImageList is a (tensor, sizes) tuple.
"""
import math

import torch
from torch import Tensor, nn


def resize_boxes(boxes, original_size, new_size):
    ratios = [torch.tensor(s, dtype=torch.float32, device=boxes.device) / torch.tensor(s_orig, dtype=torch.float32, device=boxes.device) for s, s_orig in zip(new_size, original_size)]
    ratio_height, ratio_width = ratios
    xmin, ymin, xmax, ymax = boxes.unbind(1)
    return torch.stack((xmin * ratio_width, ymin * ratio_height, xmax * ratio_width, ymax * ratio_height), dim=1)


def _resize_image_and_masks(image, self_min_size, self_max_size, target=None, fixed_size=None):
    im_shape = image.shape[-2:]
    scale_factor = min(self_min_size / min(im_shape), self_max_size / max(im_shape))
    image = torch.nn.functional.interpolate(image[None], size=None, scale_factor=scale_factor, mode="bilinear", recompute_scale_factor=True, align_corners=False)[0]
    return image, target


class GeneralizedRCNNTransform(nn.Module):
    def __init__(self, min_size, max_size, image_mean, image_std, size_divisible=32, fixed_size=None):
        super().__init__()
        if not isinstance(min_size, (list, tuple)):
            min_size = (min_size,)
        self.min_size = min_size
        self.max_size = max_size
        self.image_mean = image_mean
        self.image_std = image_std
        self.size_divisible = size_divisible
        self.fixed_size = fixed_size

    def forward(self, images, targets=None):
        images = [img for img in images]
        if targets is not None:
            targets = [{k: v for k, v in t.items()} for t in targets]
        for i in range(len(images)):
            image = images[i]
            target_index = targets[i] if targets is not None else None
            if image.dim() != 3:
                raise ValueError(f"images is expected to be a list of 3d tensors of shape [C, H, W], got {image.shape}")
            image = self.normalize(image)
            image, target_index = self.resize(image, target_index)
            images[i] = image
            if targets is not None and target_index is not None:
                targets[i] = target_index
        image_sizes = [img.shape[-2:] for img in images]
        images = self.batch_images(images, size_divisible=self.size_divisible)
        image_sizes_list = []
        for image_size in image_sizes:
            torch._assert(len(image_size) == 2, f"Input tensors expected to have in the last two elements H and W, instead got {image_size}")
            image_sizes_list.append((image_size[0], image_size[1]))
        return (images, image_sizes_list), targets

    def normalize(self, image: Tensor) -> Tensor:
        if not image.is_floating_point():
            raise TypeError(f"Expected input images to be of floating type (in range [0, 1]), but found type {image.dtype} instead")
        dtype, device = image.dtype, image.device
        mean = torch.as_tensor(self.image_mean, dtype=dtype, device=device)
        std = torch.as_tensor(self.image_std, dtype=dtype, device=device)
        return (image - mean[:, None, None]) / std[:, None, None]

    def torch_choice(self, k):
        index = int(torch.empty(1).uniform_(0.0, float(len(k))).item())
        return k[index]

    def resize(self, image, target=None):
        h, w = image.shape[-2:]
        if self.training:
            size = self.torch_choice(self.min_size)
        else:
            size = self.min_size[-1]
        image, target = _resize_image_and_masks(image, size, self.max_size, target, self.fixed_size)
        if target is None:
            return image, target
        bbox = target["boxes"]
        target["boxes"] = resize_boxes(bbox, (h, w), image.shape[-2:])
        return image, target

    def batch_images(self, images, size_divisible: int = 32):
        max_size = [max(s) for s in zip(*[list(img.shape) for img in images])]
        stride = float(size_divisible)
        max_size[1] = int(math.ceil(float(max_size[1]) / stride) * stride)
        max_size[2] = int(math.ceil(float(max_size[2]) / stride) * stride)
        batch_shape = [len(images)] + max_size
        batched_imgs = images[0].new_full(batch_shape, 0)
        for i in range(batched_imgs.shape[0]):
            img = images[i]
            batched_imgs[i, : img.shape[0], : img.shape[1], : img.shape[2]].copy_(img)
        return batched_imgs


transform = torch.compile(GeneralizedRCNNTransform((8, 10, 12), 16, [0.485, 0.456, 0.406], [0.229, 0.224, 0.225], size_divisible=4).train())


def make():
    torch.manual_seed(0)
    images = [torch.rand(3, 8, 10), torch.rand(3, 6, 6)]
    targets = [{"boxes": torch.tensor([[1.0, 1.0, 4.0, 5.0]])}, {"boxes": torch.tensor([[0.0, 0.0, 2.0, 2.0]])}]
    model = GeneralizedRCNNTransform((8, 10, 12), 16, [0.485, 0.456, 0.406], [0.229, 0.224, 0.225], size_divisible=4).train()
    return model, [(images, targets)]
