"""torchvision.transforms.v2 RandomIoUCrop (SSD augmentation): `int(torch.randint(...))`, `int(orig_w * r[0])` and `if not is_within_crop_area.any(): continue` in a retry loop.

Source: pytorch/vision@v0.29.2:torchvision/transforms/v2/_geometry.py:1140-1260
Kept: the constructor's options/trials, make_params verbatim (the outer
`while True` over random IoU thresholds, the inner trials with int() of tensor
draws, the aspect-ratio and empty-crop continues, box centres inside the
crop, the `.any()` test, the boolean-mask read of boxes, box_iou and the max
threshold), and a transform that crops the image and keeps the boxes inside.
Simplified: query_size/get_bounding_boxes read an (image, boxes) pair; boxes are XYXY.
"""
import torch


def box_iou(boxes1, boxes2):
    area1 = (boxes1[:, 2] - boxes1[:, 0]) * (boxes1[:, 3] - boxes1[:, 1])
    area2 = (boxes2[:, 2] - boxes2[:, 0]) * (boxes2[:, 3] - boxes2[:, 1])
    lt = torch.max(boxes1[:, None, :2], boxes2[:, :2])
    rb = torch.min(boxes1[:, None, 2:], boxes2[:, 2:])
    wh = (rb - lt).clamp(min=0)
    inter = wh[:, :, 0] * wh[:, :, 1]
    return inter / (area1[:, None] + area2 - inter)


class RandomIoUCrop(torch.nn.Module):
    def __init__(self, min_scale=0.3, max_scale=1.0, min_aspect_ratio=0.5, max_aspect_ratio=2.0, sampler_options=None, trials=40):
        super().__init__()
        self.min_scale = min_scale
        self.max_scale = max_scale
        self.min_aspect_ratio = min_aspect_ratio
        self.max_aspect_ratio = max_aspect_ratio
        if sampler_options is None:
            sampler_options = [0.0, 0.1, 0.3, 0.5, 0.7, 0.9, 1.0]
        self.options = sampler_options
        self.trials = trials

    def make_params(self, image, bboxes):
        orig_h, orig_w = image.shape[-2:]
        while True:
            idx = int(torch.randint(low=0, high=len(self.options), size=(1,)))
            min_jaccard_overlap = self.options[idx]
            if min_jaccard_overlap >= 1.0:
                return dict()
            for _ in range(self.trials):
                r = self.min_scale + (self.max_scale - self.min_scale) * torch.rand(2)
                new_w = int(orig_w * r[0])
                new_h = int(orig_h * r[1])
                aspect_ratio = new_w / new_h
                if not self.min_aspect_ratio <= aspect_ratio <= self.max_aspect_ratio:
                    continue
                r = torch.rand(2)
                left = int((orig_w - new_w) * r[0])
                top = int((orig_h - new_h) * r[1])
                right = left + new_w
                bottom = top + new_h
                if left == right or top == bottom:
                    continue
                xyxy_bboxes = bboxes
                cx = 0.5 * (xyxy_bboxes[..., 0] + xyxy_bboxes[..., 2])
                cy = 0.5 * (xyxy_bboxes[..., 1] + xyxy_bboxes[..., 3])
                is_within_crop_area = (left < cx) & (cx < right) & (top < cy) & (cy < bottom)
                if not is_within_crop_area.any():
                    continue
                xyxy_bboxes = xyxy_bboxes[is_within_crop_area]
                ious = box_iou(xyxy_bboxes, torch.tensor([[left, top, right, bottom]], dtype=xyxy_bboxes.dtype, device=xyxy_bboxes.device))
                if ious.max() < min_jaccard_overlap:
                    continue
                return dict(top=top, left=left, height=new_h, width=new_w, is_within_crop_area=is_within_crop_area)

    def forward(self, image, bboxes):
        params = self.make_params(image, bboxes)
        if len(params) < 1:
            return image, bboxes
        image = image[..., params["top"]: params["top"] + params["height"], params["left"]: params["left"] + params["width"]]
        return image, bboxes[params["is_within_crop_area"]]


crop = torch.compile(RandomIoUCrop())


def make():
    torch.manual_seed(0)
    boxes = torch.tensor([[1.0, 1.0, 4.0, 4.0], [5.0, 5.0, 9.0, 8.0], [2.0, 6.0, 3.0, 9.0]])
    return RandomIoUCrop(), [(torch.rand(3, 10, 10), boxes)]
