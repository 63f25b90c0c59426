"""torchvision AnchorGenerator.forward: 0-d stride tensors via fill_, set_cell_anchors rebinding a list attribute, grid_anchors with torch._assert.

Source: pytorch/vision@v0.29.2:torchvision/models/detection/anchor_utils.py:35-133
Kept: generate_anchors (scales x aspect ratios, rounding), set_cell_anchors
(`self.cell_anchors = [a.to(dtype, device) ...]` in forward), grid_anchors
(the None and length torch._asserts, arange * stride tensors, meshgrid,
stacked shifts) and forward (grid sizes from shapes, strides via
torch.empty(()).fill_, the per-image lists and cat).
Simplified: ImageList is (tensors, image_sizes); 2 feature maps, 1 size, 2 ratios.
"""
import torch
from torch import nn


class AnchorGenerator(nn.Module):
    def __init__(self, sizes=((8,), (16,)), aspect_ratios=((0.5, 1.0), (0.5, 1.0))):
        super().__init__()
        self.sizes = sizes
        self.aspect_ratios = aspect_ratios
        self.cell_anchors = [self.generate_anchors(size, aspect_ratio) for size, aspect_ratio in zip(sizes, aspect_ratios)]

    def generate_anchors(self, scales, aspect_ratios, dtype=torch.float32, device=torch.device("cpu")):
        scales = torch.as_tensor(scales, dtype=dtype, device=device)
        aspect_ratios = torch.as_tensor(aspect_ratios, dtype=dtype, device=device)
        h_ratios = torch.sqrt(aspect_ratios)
        w_ratios = 1 / h_ratios
        ws = (w_ratios[:, None] * scales[None, :]).view(-1)
        hs = (h_ratios[:, None] * scales[None, :]).view(-1)
        base_anchors = torch.stack([-ws, -hs, ws, hs], dim=1) / 2
        return base_anchors.round()

    def set_cell_anchors(self, dtype, device):
        self.cell_anchors = [cell_anchor.to(dtype=dtype, device=device) for cell_anchor in self.cell_anchors]

    def grid_anchors(self, grid_sizes, strides):
        anchors = []
        cell_anchors = self.cell_anchors
        torch._assert(cell_anchors is not None, "cell_anchors should not be None")
        torch._assert(
            len(grid_sizes) == len(strides) == len(cell_anchors),
            "Anchors should be Tuple[Tuple[int]] because each feature map could potentially have different sizes and aspect ratios.",
        )
        for size, stride, base_anchors in zip(grid_sizes, strides, cell_anchors):
            grid_height, grid_width = size
            stride_height, stride_width = stride
            device = base_anchors.device
            shifts_x = torch.arange(0, grid_width, dtype=torch.int32, device=device) * stride_width
            shifts_y = torch.arange(0, grid_height, dtype=torch.int32, device=device) * stride_height
            shift_y, shift_x = torch.meshgrid(shifts_y, shifts_x, indexing="ij")
            shift_x = shift_x.reshape(-1)
            shift_y = shift_y.reshape(-1)
            shifts = torch.stack((shift_x, shift_y, shift_x, shift_y), dim=1)
            anchors.append((shifts.view(-1, 1, 4) + base_anchors.view(1, -1, 4)).reshape(-1, 4))
        return anchors

    def forward(self, images, image_sizes, feature_maps):
        grid_sizes = [feature_map.shape[-2:] for feature_map in feature_maps]
        image_size = images.shape[-2:]
        dtype, device = feature_maps[0].dtype, feature_maps[0].device
        strides = [
            [torch.empty((), dtype=torch.int64, device=device).fill_(image_size[0] // g[0]),
             torch.empty((), dtype=torch.int64, device=device).fill_(image_size[1] // g[1])]
            for g in grid_sizes
        ]
        self.set_cell_anchors(dtype, device)
        anchors_over_all_feature_maps = self.grid_anchors(grid_sizes, strides)
        anchors = []
        for _ in range(len(image_sizes)):
            anchors_in_image = [anchors_per_feature_map for anchors_per_feature_map in anchors_over_all_feature_maps]
            anchors.append(anchors_in_image)
        anchors = [torch.cat(anchors_per_image) for anchors_per_image in anchors]
        return anchors


anchor_generator = torch.compile(AnchorGenerator())


def make():
    torch.manual_seed(0)
    return AnchorGenerator(), [(torch.randn(2, 3, 16, 16), [(16, 16), (16, 16)], [torch.randn(2, 4, 4, 4), torch.randn(2, 4, 2, 2)])]
