"""timm NaFlex PatchEmbedInterpolator: per-call patch-size resampling with a pinv matrix cached in a dict keyed by (size, device, dtype), built under inference_mode(False) + autocast(enabled=False).

Source: huggingface/pytorch-image-models@v1.0.31:timm/layers/patch_embed.py:283-318,343-484,487-666
Kept: _compute_resize_matrix (eye basis interpolated with antialias),
_apply_resampling, PatchEmbedResamplerFixedOrigSize (the runtime-only
_pinv_cache_map, prewarm, the _cache_device_anchor buffer, _get_or_create_pinv_matrix
with its context managers and torch.linalg.pinv, forward's asserts with an
f-string message and the no-op case), and PatchEmbedInterpolator
(resample_linear_weight for channels_last and channels_first layouts,
resample_conv_weight, forward's linear/conv and resample/no-resample paths).
make() prewarms the 3x3 size, as the docstring advises before torch.compile,
so one input set hits the cache and another misses it.
Simplified: _apply is left out; 3 channels, 8-dim embedding, base
patch 4x4 resampled to 2x2 or 3x3.
"""
from typing import Dict, Iterable, List, Optional, Tuple, Union

import torch
import torch.nn.functional as F
from torch import nn

DTYPE_INTERMEDIATE = torch.float32


def to_2tuple(x):
    if isinstance(x, (tuple, list)):
        return tuple(x)
    return (x, x)


def _compute_resize_matrix(
        old_size: Tuple[int, int],
        new_size: Tuple[int, int],
        interpolation: str,
        antialias: bool,
        device: torch.device,
        dtype: torch.dtype = DTYPE_INTERMEDIATE
) -> torch.Tensor:
    """Computes the resize matrix basis vectors and interpolates them to new_size."""
    old_h, old_w = old_size
    new_h, new_w = new_size
    old_total = old_h * old_w
    new_total = new_h * new_w

    eye_matrix = torch.eye(old_total, device=device, dtype=dtype)
    basis_vectors_batch = eye_matrix.reshape(old_total, 1, old_h, old_w)
    resized_basis_vectors_batch = F.interpolate(
        basis_vectors_batch,
        size=new_size,
        mode=interpolation,
        antialias=antialias,
        align_corners=False
    ) # Output shape: (old_total, 1, new_h, new_w)
    resize_matrix = resized_basis_vectors_batch.squeeze(1).permute(1, 2, 0).reshape(new_total, old_total)
    return resize_matrix # Shape: (new_total, old_total)


def _apply_resampling(
        patch_embed: torch.Tensor,
        pinv_matrix: torch.Tensor,
        new_size_tuple: Tuple[int, int],
        orig_dtype: torch.dtype,
        intermediate_dtype: torch.dtype = DTYPE_INTERMEDIATE
) -> torch.Tensor:
    """ Simplified resampling w/o vmap use.
    As proposed by https://github.com/stas-sl
    """
    c_out, c_in, *_ = patch_embed.shape
    patch_embed = patch_embed.reshape(c_out, c_in, -1).to(dtype=intermediate_dtype)
    pinv_matrix = pinv_matrix.to(dtype=intermediate_dtype)
    resampled_patch_embed = patch_embed @ pinv_matrix  # (C_out, C_in, P_old * P_old) @ (P_old * P_old, P_new * P_new)
    resampled_patch_embed = resampled_patch_embed.reshape(c_out, c_in, *new_size_tuple).to(dtype=orig_dtype)
    return resampled_patch_embed


class PatchEmbedResamplerFixedOrigSize(nn.Module):
    def __init__(
            self,
            orig_size: Tuple[int, int],
            interpolation: str = 'bicubic',
            antialias: bool = True,
            device=None,
    ):
        super().__init__()
        assert isinstance(orig_size, tuple) and len(orig_size) == 2, \
            "`orig_size` must be a tuple of (height, width)"
        self.orig_size = orig_size # expected original size
        self.interpolation = interpolation
        self.antialias = antialias
        # Runtime-only cache. Keep matrices out of module buffers so DDP does
        # not broadcast derived data on every forward.
        self._pinv_cache_map: Dict[
            Tuple[Tuple[int, int], torch.device, torch.dtype],
            torch.Tensor,
        ] = {}
        self.register_buffer(
            '_cache_device_anchor',
            torch.empty(0, dtype=torch.uint8, device=device),
            persistent=False,
        )

    def _get_or_create_pinv_matrix(
            self,
            new_size: Tuple[int, int],
            device: torch.device,
            dtype: torch.dtype = DTYPE_INTERMEDIATE
    ) -> torch.Tensor:
        """Retrieves or computes the cached pinv matrix for a target size, device, and dtype."""
        cache_key = (new_size, device, dtype)
        pinv_matrix = self._pinv_cache_map.get(cache_key)
        if pinv_matrix is not None:
            return pinv_matrix

        # Calculate the matrix if not cached or needs update
        with torch.inference_mode(False), torch.autocast(device_type=device.type, enabled=False):
            resize_mat = _compute_resize_matrix(
                self.orig_size, new_size, self.interpolation, self.antialias, device, dtype
            )
            pinv_matrix = torch.linalg.pinv(resize_mat)  # Calculates the pseudoinverse matrix used for resampling

        self._pinv_cache_map[cache_key] = pinv_matrix

        return pinv_matrix

    def prewarm(
            self,
            new_sizes: Iterable[Union[int, Tuple[int, int]]],
            device: Optional[Union[str, torch.device]] = None,
    ) -> None:
        """Precompute resampling matrices for a collection of target sizes.

        Prewarming is useful before ``torch.compile`` or other captured execution,
        where creating a new cache entry during the first forward is undesirable.
        """
        if device is not None:
            device = torch.empty(0, device=torch.device(device)).device
        else:
            device = self._cache_device_anchor.device
        for new_size in new_sizes:
            new_size = to_2tuple(new_size)
            if new_size != self.orig_size:
                self._get_or_create_pinv_matrix(new_size, device)

    def forward(self, patch_embed: torch.Tensor, new_size: List[int]) -> torch.Tensor:
        assert len(patch_embed.shape) == 4
        assert len(new_size) == 2

        # Input Validation
        input_size = tuple(patch_embed.shape[-2:])
        assert input_size == self.orig_size, \
            f"Input patch_embed spatial size {input_size} does not match " \
            f"module's expected original size {self.orig_size}"

        new_size_tuple: Tuple[int, int] = tuple(new_size)

        # Check no-op case against self.orig_size
        if self.orig_size == new_size_tuple:
            return patch_embed

        device = patch_embed.device
        orig_dtype = patch_embed.dtype

        # Get or compute the required pseudoinverse matrix
        pinv_matrix = self._get_or_create_pinv_matrix(new_size_tuple, device)

        # Apply the resampling
        resampled_patch_embed = _apply_resampling(patch_embed, pinv_matrix, new_size_tuple, orig_dtype)

        return resampled_patch_embed


class PatchEmbedInterpolator(nn.Module):
    def __init__(
            self,
            base_patch_size: Tuple[int, int],
            in_chans: int = 3,
            embed_dim: int = 768,
            interpolation: str = 'bicubic',
            antialias: bool = True,
            channels_last: bool = True,
            device=None,
    ):
        super().__init__()
        self.base_patch_size = base_patch_size
        self.in_chans = in_chans
        self.embed_dim = embed_dim
        self.interpolation = interpolation
        self.antialias = antialias
        self.channels_last = channels_last
        self.resampler = PatchEmbedResamplerFixedOrigSize(
            orig_size=base_patch_size,
            interpolation=interpolation,
            antialias=antialias,
            device=device,
        )

    def prewarm(
            self,
            target_patch_sizes: Iterable[Union[int, Tuple[int, int]]],
            device: Optional[Union[str, torch.device]] = None,
    ) -> None:
        self.resampler.prewarm(target_patch_sizes, device=device)

    def resample_linear_weight(self, weight: torch.Tensor, target_patch_size: Tuple[int, int]) -> torch.Tensor:
        if target_patch_size == self.base_patch_size:
            return weight

        embed_dim = weight.shape[0]
        base_ph, base_pw = self.base_patch_size
        target_ph, target_pw = target_patch_size

        # Reshape linear weight to conv2d format [embed_dim, C, ph, pw] for the (spatial-only) resize.
        if self.channels_last:
            weight_conv = weight.reshape(embed_dim, base_ph, base_pw, self.in_chans).permute(0, 3, 1, 2)
        else:
            weight_conv = weight.reshape(embed_dim, self.in_chans, base_ph, base_pw)

        # Resample spatial dimensions with the shared pseudoinverse cache.
        weight_conv_resampled = self.resampler(weight_conv, [target_ph, target_pw])

        # Reshape back to linear format [embed_dim, ph*pw*C] in the same channel order.
        if self.channels_last:
            weight_resampled = weight_conv_resampled.permute(0, 2, 3, 1).reshape(embed_dim, -1)
        else:
            weight_resampled = weight_conv_resampled.reshape(embed_dim, -1)

        return weight_resampled

    def resample_conv_weight(self, weight: torch.Tensor, target_patch_size: Tuple[int, int]) -> torch.Tensor:
        if target_patch_size == self.base_patch_size:
            return weight

        weight_resampled = self.resampler(weight, list(target_patch_size))

        return weight_resampled

    def forward(
            self,
            patches: torch.Tensor,
            proj_weight: torch.Tensor,
            proj_bias: Optional[torch.Tensor] = None,
            patch_size: Optional[Tuple[int, int]] = None,
            is_linear: bool = True,
    ) -> torch.Tensor:
        if patch_size is None:
            patch_size = self.base_patch_size

        if is_linear:
            if patch_size != self.base_patch_size:
                assert patches.ndim == 5, \
                    "Patches must be 5-D ([B, N, Ph, Pw, C] or [B, N, C, Ph, Pw]) for resampling"
                B, N = patches.shape[:2]

                # Resample the weight (channel layout handled per self.channels_last)
                weight_resampled = self.resample_linear_weight(proj_weight, patch_size)

                # Flatten patches and apply linear projection
                patches_flat = patches.reshape(B, N, -1)
                output = torch.nn.functional.linear(patches_flat, weight_resampled, proj_bias)
            else:
                # No resampling needed, patches can be pre-flattened (flatten preserves layout order)
                if patches.ndim == 5:
                    patches = patches.reshape(patches.shape[0], patches.shape[1], -1)
                output = torch.nn.functional.linear(patches, proj_weight, proj_bias)
        else:
            # Conv mode
            if patch_size != self.base_patch_size:
                weight_resampled = self.resample_conv_weight(proj_weight, patch_size)
                output = torch.nn.functional.conv2d(
                    patches, weight_resampled, proj_bias,
                    stride=patch_size, padding=0
                )
            else:
                output = torch.nn.functional.conv2d(
                    patches, proj_weight, proj_bias,
                    stride=patch_size, padding=0
                )

        return output


def build(channels_last=True):
    return PatchEmbedInterpolator((4, 4), in_chans=3, embed_dim=8, channels_last=channels_last)


interpolator = torch.compile(build(), fullgraph=False)


def make():
    torch.manual_seed(0)
    linear_w, bias = torch.randn(8, 4 * 4 * 3), torch.randn(8)
    conv_w = torch.randn(8, 3, 4, 4)
    module = build()
    module.prewarm([3])
    return module, [
        (torch.randn(2, 5, 2, 2, 3), linear_w, bias, (2, 2), True),
        (torch.randn(2, 5, 4, 4, 3), linear_w, bias, None, True),
        (torch.randn(1, 3, 6, 6), conv_w, bias, (3, 3), False),
        (torch.randn(1, 3, 8, 8), conv_w, None, (4, 4), False),
    ]
