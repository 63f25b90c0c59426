"""gsplat's PyTorch reference tile intersection: `.item()` intersection count, a Python "kernel" closure per Gaussian with tensor comparisons, struct bit-casts and nested range() over tensor bounds, then offset encoding with unique_consecutive.

Source: nerfstudio-project/gsplat@90d7b4b349e379ccf9ee6a8cef76aa40f48bb32e:gsplat/cuda/_torch_impl.py:42-482
Kept: _bits_for_count, _isect_tiles verbatim (@torch.no_grad, shape
asserts, tile min/max clamps, tiles_per_gauss.sum().item(), torch.empty of
that size, the nested kernel(image_id, gauss_id) closure with its early
return, struct.pack/unpack of the depth, range(tile_min[1], tile_max[1])
loops writing single elements, the sort flag) and _isect_offset_encode
verbatim (unique_consecutive with counts, advanced-index write, cumsum).
Simplified: the compiled entry is a small wrapper chaining the two like
gsplat's rasterization() does; 1 camera, 4 Gaussians, 16x16 image in
8-pixel tiles.
"""
import math
import struct
from typing import Tuple

import torch
from torch import Tensor


def _bits_for_count(count: int) -> int:
    return (count - 1).bit_length() if count > 1 else 0


@torch.no_grad()
def _isect_tiles(
    means2d: Tensor,  # [..., N, 2]
    radii: Tensor,  # [..., N, 2]
    depths: Tensor,  # [..., N]
    tile_size: int,
    tile_width: int,
    tile_height: int,
    sort: bool = True,
) -> Tuple[Tensor, Tensor, Tensor]:
    image_dims = means2d.shape[:-2]
    N = means2d.shape[-2]
    assert means2d.shape == image_dims + (N, 2), means2d.shape
    assert radii.shape == image_dims + (N, 2), radii.shape
    assert depths.shape == image_dims + (N,), depths.shape

    device = means2d.device
    I = math.prod(image_dims)
    means2d = means2d.reshape(I, N, 2)
    radii = radii.reshape(I, N, 2)
    depths = depths.reshape(I, N)

    # compute tiles_per_gauss
    tile_means2d = means2d / tile_size
    tile_radii = radii / tile_size
    tile_mins = torch.floor(tile_means2d - tile_radii).int()
    tile_maxs = torch.ceil(tile_means2d + tile_radii).int()
    tile_mins[..., 0] = torch.clamp(tile_mins[..., 0], 0, tile_width)
    tile_mins[..., 1] = torch.clamp(tile_mins[..., 1], 0, tile_height)
    tile_maxs[..., 0] = torch.clamp(tile_maxs[..., 0], 0, tile_width)
    tile_maxs[..., 1] = torch.clamp(tile_maxs[..., 1], 0, tile_height)
    tiles_per_gauss = (tile_maxs - tile_mins).prod(dim=-1)  # [..., C, N]
    tiles_per_gauss *= (radii > 0.0).all(dim=-1)

    n_isects = tiles_per_gauss.sum().item()
    # store in two int32 tensors instead, otherwise it will trigger out of bounds error
    # isect_ids = torch.empty(n_isects, dtype=torch.int64, device=device)
    isect_ids_lo = torch.empty(n_isects, dtype=torch.int32, device=device)
    isect_ids_hi = torch.empty(n_isects, dtype=torch.int32, device=device)
    flatten_ids = torch.empty(n_isects, dtype=torch.int32, device=device)

    cum_tiles_per_gauss = torch.cumsum(tiles_per_gauss.flatten(), dim=0)
    image_n_bits = _bits_for_count(I)
    tile_n_bits = _bits_for_count(tile_width * tile_height)
    assert image_n_bits + tile_n_bits + 32 <= 64

    def binary(num):
        return "".join("{:0>8b}".format(c) for c in struct.pack("!f", num))

    def kernel(image_id, gauss_id):
        if radii[image_id, gauss_id, 0] <= 0.0 or radii[image_id, gauss_id, 1] <= 0.0:
            return
        index = image_id * N + gauss_id
        curr_idx = cum_tiles_per_gauss[index - 1] if index > 0 else 0

        # Reinterpret float bits as int32 (preserving bit pattern)
        depth_f32 = depths[image_id, gauss_id]
        depth_id = struct.unpack("i", struct.pack("f", depth_f32))[0]
        # Store in a 64-bit int, zero-extending to lower 32 bits
        depth_id = int(depth_id) & 0xFFFFFFFF  # Ensures upper 32 bits are zero

        tile_min = tile_mins[image_id, gauss_id]
        tile_max = tile_maxs[image_id, gauss_id]
        for y in range(tile_min[1], tile_max[1]):
            for x in range(tile_min[0], tile_max[0]):
                tile_id = y * tile_width + x
                isect_ids_lo[curr_idx] = depth_id
                isect_ids_hi[curr_idx] = (image_id << tile_n_bits) | tile_id
                flatten_ids[curr_idx] = index  # flattened index
                curr_idx += 1

    for image_id in range(I):
        for gauss_id in range(N):
            kernel(image_id, gauss_id)

    isect_ids = (isect_ids_hi.to(torch.int64) << 32) | (
        isect_ids_lo.to(torch.int64) & 0xFFFFFFFF
    )

    if sort:
        isect_ids, sort_indices = torch.sort(isect_ids)
        flatten_ids = flatten_ids[sort_indices]

    tiles_per_gauss = tiles_per_gauss.reshape(image_dims + (N,)).int()
    return tiles_per_gauss, isect_ids, flatten_ids


@torch.no_grad()
def _isect_offset_encode(
    isect_ids: Tensor, I: int, tile_width: int, tile_height: int
) -> Tensor:
    tile_n_bits = _bits_for_count(tile_width * tile_height)
    tile_counts = torch.zeros(
        (I, tile_height, tile_width), dtype=torch.int64, device=isect_ids.device
    )

    isect_ids_uq, counts = torch.unique_consecutive(isect_ids >> 32, return_counts=True)

    image_ids_uq = isect_ids_uq >> tile_n_bits
    tile_ids_uq = isect_ids_uq & ((1 << tile_n_bits) - 1)
    tile_ids_x_uq = tile_ids_uq % tile_width
    tile_ids_y_uq = tile_ids_uq // tile_width

    tile_counts[image_ids_uq, tile_ids_y_uq, tile_ids_x_uq] = counts

    cum_tile_counts = torch.cumsum(tile_counts.flatten(), dim=0).reshape_as(tile_counts)
    offsets = cum_tile_counts - tile_counts
    return offsets.int()


@torch.compile(dynamic=False)
def tile_binning(means2d, radii, depths, width: int, height: int, tile_size: int = 8):
    tile_width = math.ceil(width / float(tile_size))
    tile_height = math.ceil(height / float(tile_size))
    tiles_per_gauss, isect_ids, flatten_ids = _isect_tiles(
        means2d, radii, depths, tile_size, tile_width, tile_height, sort=True
    )
    isect_offsets = _isect_offset_encode(isect_ids, 1, tile_width, tile_height)
    return tiles_per_gauss, isect_ids, flatten_ids, isect_offsets


def make():
    torch.manual_seed(0)
    means2d = torch.tensor([[[4.0, 4.0], [12.0, 5.0], [8.0, 8.0], [3.0, 13.0]]])
    # the last Gaussian has a zero radius (culled): kernel() returns early for it
    radii = torch.tensor([[[2, 2], [3, 2], [5, 5], [0, 0]]], dtype=torch.int32)
    depths = torch.tensor([[1.0, 2.5, 0.5, 3.0]])
    return tile_binning._torchdynamo_orig_callable, [(means2d, radii, depths, 16, 16)]
