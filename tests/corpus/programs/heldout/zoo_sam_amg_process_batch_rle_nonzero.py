"""SAM 2 automatic mask generator `_process_batch`: IoU and stability filters index MaskData with boolean masks, `if not torch.all(keep_mask)` guards the crop-edge filter, and `mask_to_rle_pytorch` walks `diff.nonzero()` into `.tolist()` counts.

Source: facebookresearch/sam2@2b90b9f5ceec907a1c18123530e92e794ad901a4:sam2/automatic_mask_generator.py:_process_batch
Also: sam2/utils/amg.py (MaskData, is_box_near_crop_edge, mask_to_rle_pytorch,
calculate_stability_score, uncrop_boxes_xyxy, uncrop_masks,
batched_mask_to_box; the same helpers as segment-anything's
segment_anything/utils/amg.py@dca509fe), sam2/utils/transforms.py
(SAM2Transforms.transform_coords).
Kept: _process_batch's non-m2m path as written, MaskData's
filter/__setitem__/__delitem__, the amg helpers named above.
Simplified: SAM2ImagePredictor._predict is a tiny point-conditioned head that
returns 3 mask logits, IoU predictions and low-res masks per point (no image
encoder); the m2m refinement branch raises; only the per-batch step is
compiled (segment-anything's own version, with numpy `deepcopy(coords)` in
ResizeLongestSide.apply_coords, fails to compile outright); 16x16 masks.
"""
from typing import Any, Dict, ItemsView, List, Tuple

import numpy as np
import torch
from torch import nn


class MaskData:
    """A structure for storing masks and their related data in batched format."""

    def __init__(self, **kwargs) -> None:
        for v in kwargs.values():
            assert isinstance(
                v, (list, np.ndarray, torch.Tensor)
            ), "MaskData only supports list, numpy arrays, and torch tensors."
        self._stats = dict(**kwargs)

    def __setitem__(self, key: str, item: Any) -> None:
        assert isinstance(
            item, (list, np.ndarray, torch.Tensor)
        ), "MaskData only supports list, numpy arrays, and torch tensors."
        self._stats[key] = item

    def __delitem__(self, key: str) -> None:
        del self._stats[key]

    def __getitem__(self, key: str) -> Any:
        return self._stats[key]

    def items(self) -> ItemsView[str, Any]:
        return self._stats.items()

    def filter(self, keep: torch.Tensor) -> None:
        for k, v in self._stats.items():
            if v is None:
                self._stats[k] = None
            elif isinstance(v, torch.Tensor):
                self._stats[k] = v[torch.as_tensor(keep, device=v.device)]
            elif isinstance(v, np.ndarray):
                self._stats[k] = v[keep.detach().cpu().numpy()]
            elif isinstance(v, list) and keep.dtype == torch.bool:
                self._stats[k] = [a for i, a in enumerate(v) if keep[i]]
            elif isinstance(v, list):
                self._stats[k] = [v[i] for i in keep]
            else:
                raise TypeError(f"MaskData key {k} has an unsupported type {type(v)}.")


def uncrop_boxes_xyxy(boxes: torch.Tensor, crop_box: List[int]) -> torch.Tensor:
    x0, y0, _, _ = crop_box
    offset = torch.tensor([[x0, y0, x0, y0]], device=boxes.device)
    # Check if boxes has a channel dimension
    if len(boxes.shape) == 3:
        offset = offset.unsqueeze(1)
    return boxes + offset


def uncrop_masks(masks: torch.Tensor, crop_box: List[int], orig_h: int, orig_w: int) -> torch.Tensor:
    x0, y0, x1, y1 = crop_box
    if x0 == 0 and y0 == 0 and x1 == orig_w and y1 == orig_h:
        return masks
    # Coordinate transform masks
    pad_x, pad_y = orig_w - (x1 - x0), orig_h - (y1 - y0)
    pad = (x0, pad_x - x0, y0, pad_y - y0)
    return torch.nn.functional.pad(masks, pad, value=0)


def is_box_near_crop_edge(
    boxes: torch.Tensor, crop_box: List[int], orig_box: List[int], atol: float = 20.0
) -> torch.Tensor:
    """Filter masks at the edge of a crop, but not at the edge of the original image."""
    crop_box_torch = torch.as_tensor(crop_box, dtype=torch.float, device=boxes.device)
    orig_box_torch = torch.as_tensor(orig_box, dtype=torch.float, device=boxes.device)
    boxes = uncrop_boxes_xyxy(boxes, crop_box).float()
    near_crop_edge = torch.isclose(boxes, crop_box_torch[None, :], atol=atol, rtol=0)
    near_image_edge = torch.isclose(boxes, orig_box_torch[None, :], atol=atol, rtol=0)
    near_crop_edge = torch.logical_and(near_crop_edge, ~near_image_edge)
    return torch.any(near_crop_edge, dim=1)


def mask_to_rle_pytorch(tensor: torch.Tensor) -> List[Dict[str, Any]]:
    """Encodes masks to an uncompressed RLE, in the format expected by pycoco tools."""
    # Put in fortran order and flatten h,w
    b, h, w = tensor.shape
    tensor = tensor.permute(0, 2, 1).flatten(1)

    # Compute change indices
    diff = tensor[:, 1:] ^ tensor[:, :-1]
    change_indices = diff.nonzero()

    # Encode run length
    out = []
    for i in range(b):
        cur_idxs = change_indices[change_indices[:, 0] == i, 1]
        cur_idxs = torch.cat(
            [
                torch.tensor([0], dtype=cur_idxs.dtype, device=cur_idxs.device),
                cur_idxs + 1,
                torch.tensor([h * w], dtype=cur_idxs.dtype, device=cur_idxs.device),
            ]
        )
        btw_idxs = cur_idxs[1:] - cur_idxs[:-1]
        counts = [] if tensor[i, 0] == 0 else [0]
        counts.extend(btw_idxs.detach().cpu().tolist())
        out.append({"size": [h, w], "counts": counts})
    return out


def calculate_stability_score(masks: torch.Tensor, mask_threshold: float, threshold_offset: float) -> torch.Tensor:
    # One mask is always contained inside the other.
    # Save memory by preventing unnecessary cast to torch.int64
    intersections = (
        (masks > (mask_threshold + threshold_offset))
        .sum(-1, dtype=torch.int16)
        .sum(-1, dtype=torch.int32)
    )
    unions = (
        (masks > (mask_threshold - threshold_offset))
        .sum(-1, dtype=torch.int16)
        .sum(-1, dtype=torch.int32)
    )
    return intersections / unions


def batched_mask_to_box(masks: torch.Tensor) -> torch.Tensor:
    # torch.max below raises an error on empty inputs, just skip in this case
    if torch.numel(masks) == 0:
        return torch.zeros(*masks.shape[:-2], 4, device=masks.device)

    # Normalize shape to CxHxW
    shape = masks.shape
    h, w = shape[-2:]
    if len(shape) > 2:
        masks = masks.flatten(0, -3)
    else:
        masks = masks.unsqueeze(0)

    # Get top and bottom edges
    in_height, _ = torch.max(masks, dim=-1)
    in_height_coords = in_height * torch.arange(h, device=in_height.device)[None, :]
    bottom_edges, _ = torch.max(in_height_coords, dim=-1)
    in_height_coords = in_height_coords + h * (~in_height)
    top_edges, _ = torch.min(in_height_coords, dim=-1)

    # Get left and right edges
    in_width, _ = torch.max(masks, dim=-2)
    in_width_coords = in_width * torch.arange(w, device=in_width.device)[None, :]
    right_edges, _ = torch.max(in_width_coords, dim=-1)
    in_width_coords = in_width_coords + w * (~in_width)
    left_edges, _ = torch.min(in_width_coords, dim=-1)

    # If the mask is empty the right edge will be to the left of the left edge.
    # Replace these boxes with [0, 0, 0, 0]
    empty_filter = (right_edges < left_edges) | (bottom_edges < top_edges)
    out = torch.stack([left_edges, top_edges, right_edges, bottom_edges], dim=-1)
    out = out * (~empty_filter).unsqueeze(-1)

    # Return to original shape
    if len(shape) > 2:
        out = out.reshape(*shape[:-2], 4)
    else:
        out = out[0]

    return out


class SAM2Transforms:
    def __init__(self, resolution: int) -> None:
        self.resolution = resolution

    def transform_coords(self, coords: torch.Tensor, normalize=False, orig_hw=None) -> torch.Tensor:
        """Un-normalized coordinates in the range of [0, 1] which is expected by the SAM2 model."""
        if normalize:
            assert orig_hw is not None
            h, w = orig_hw
            coords = coords.clone()
            coords[..., 0] = coords[..., 0] / w
            coords[..., 1] = coords[..., 1] / h

        coords = coords * self.resolution  # unnormalize coords
        return coords


class TinySam(nn.Module):
    mask_threshold: float = 0.0

    def __init__(self, size=16):
        super().__init__()
        self.size = size
        self.point_embed = nn.Linear(2, 8)
        self.mask_head = nn.Linear(8, 3 * 4 * 4)
        self.iou_head = nn.Linear(8, 3)


class SAM2ImagePredictor:
    def __init__(self, model: TinySam) -> None:
        self.model = model
        self._transforms = SAM2Transforms(model.size)
        self.device = torch.device("cpu")

    def _predict(self, point_coords, point_labels, multimask_output=True, return_logits=False):
        emb = self.model.point_embed(point_coords[:, 0].float() / self.model.size)
        emb = emb + point_labels.float()
        low_res = self.model.mask_head(emb).view(-1, 3, 4, 4)
        # a blob around each point, sharpened by the learned low-res logits
        grid = torch.arange(self.model.size, dtype=torch.float)
        dist = (grid[None, :, None] - point_coords[:, 0, 1, None, None]) ** 2 + (grid[None, None, :] - point_coords[:, 0, 0, None, None]) ** 2
        radius = torch.tensor([2.0, 4.0, 7.0])
        masks = radius[None, :, None, None] ** 2 - dist[:, None] + torch.nn.functional.interpolate(low_res, size=(self.model.size, self.model.size))
        iou_preds = torch.sigmoid(self.model.iou_head(emb))
        return masks, iou_preds, low_res


class SAM2AutomaticMaskGenerator:
    def __init__(self, model, pred_iou_thresh: float = 0.4, stability_score_thresh: float = 0.5,
                 stability_score_offset: float = 1.0, mask_threshold: float = 0.0,
                 multimask_output: bool = True, use_m2m: bool = False) -> None:
        self.predictor = SAM2ImagePredictor(model)
        self.mask_threshold = mask_threshold
        self.multimask_output = multimask_output
        self.use_m2m = use_m2m
        self.pred_iou_thresh = pred_iou_thresh
        self.stability_score_thresh = stability_score_thresh
        self.stability_score_offset = stability_score_offset

    def _process_batch(
        self,
        points: np.ndarray,
        im_size: Tuple[int, ...],
        crop_box: List[int],
        orig_size: Tuple[int, ...],
        normalize=False,
    ) -> MaskData:
        orig_h, orig_w = orig_size

        # Run model on this batch
        points = torch.as_tensor(
            points, dtype=torch.float32, device=self.predictor.device
        )
        in_points = self.predictor._transforms.transform_coords(
            points, normalize=normalize, orig_hw=im_size
        )
        in_labels = torch.ones(
            in_points.shape[0], dtype=torch.int, device=in_points.device
        )
        masks, iou_preds, low_res_masks = self.predictor._predict(
            in_points[:, None, :],
            in_labels[:, None],
            multimask_output=self.multimask_output,
            return_logits=True,
        )

        # Serialize predictions and store in MaskData
        data = MaskData(
            masks=masks.flatten(0, 1),
            iou_preds=iou_preds.flatten(0, 1),
            points=points.repeat_interleave(masks.shape[1], dim=0),
            low_res_masks=low_res_masks.flatten(0, 1),
        )
        del masks

        if not self.use_m2m:
            # Filter by predicted IoU
            if self.pred_iou_thresh > 0.0:
                keep_mask = data["iou_preds"] > self.pred_iou_thresh
                data.filter(keep_mask)

            # Calculate and filter by stability score
            data["stability_score"] = calculate_stability_score(
                data["masks"], self.mask_threshold, self.stability_score_offset
            )
            if self.stability_score_thresh > 0.0:
                keep_mask = data["stability_score"] >= self.stability_score_thresh
                data.filter(keep_mask)
        else:
            raise NotImplementedError("mask-to-mask refinement is not reproduced here")

        # Threshold masks and calculate boxes
        data["masks"] = data["masks"] > self.mask_threshold
        data["boxes"] = batched_mask_to_box(data["masks"])

        # Filter boxes that touch crop boundaries
        keep_mask = ~is_box_near_crop_edge(
            data["boxes"], crop_box, [0, 0, orig_w, orig_h]
        )
        if not torch.all(keep_mask):
            data.filter(keep_mask)

        # Compress to RLE
        data["masks"] = uncrop_masks(data["masks"], crop_box, orig_h, orig_w)
        data["rles"] = mask_to_rle_pytorch(data["masks"])
        del data["masks"]

        return data


def build_generator():
    generator = SAM2AutomaticMaskGenerator(TinySam())
    generator._process_batch = torch.compile(generator._process_batch)
    return generator


def make():
    torch.manual_seed(0)
    generator = SAM2AutomaticMaskGenerator(TinySam())
    points = np.array([[4.0, 5.0], [10.0, 9.0], [8.0, 2.0]])
    return generator._process_batch, [
        (points / 16, (16, 16), [0, 0, 16, 16], (16, 16)),
        (points * 0.5, (8, 8), [8, 8, 16, 16], (16, 16), True),
    ]
