"""nerfstudio renderers: RGBRenderer compares `background_color` (a string or a Tensor) with `== "random"`, reads a module-global override, clamps in eval; DepthRenderer's median via searchsorted and expected depth clipped to `steps.min()`/`steps.max()`.

Source: nerfstudio-project/nerfstudio@00d10a170b267ab3a546349f6a972ec56e0b4739:nerfstudio/model_components/renderers.py:40-330
Also: nerfstudio/utils/colors.py (COLORS_DICT) and nerfstudio/cameras/rays.py
(RaySamples.get_weights).
Kept: BACKGROUND_COLOR_OVERRIDE and its context manager, RGBRenderer (combine_rgb,
get_background_color, forward), AccumulationRenderer, DepthRenderer verbatim, and the way
nerfacto's get_outputs chains them off `ray_samples.get_weights(density)`.
Simplified: no nerfacc packed-sample path (ray_indices is always None); Frustums/RaySamples
are small dataclasses with the fields used; jaxtyping annotations dropped.
"""
import contextlib
from dataclasses import dataclass
from typing import Generator, Literal, Optional, Tuple, Union

import torch
from torch import Tensor, nn

COLORS_DICT = {
    "white": torch.tensor([1.0, 1.0, 1.0]),
    "black": torch.tensor([0.0, 0.0, 0.0]),
    "red": torch.tensor([1.0, 0.0, 0.0]),
    "green": torch.tensor([0.0, 1.0, 0.0]),
    "blue": torch.tensor([0.0, 0.0, 1.0]),
}

BackgroundColor = Union[Literal["random", "last_sample", "black", "white"], Tensor]
BACKGROUND_COLOR_OVERRIDE: Optional[Tensor] = None


@contextlib.contextmanager
def background_color_override_context(mode: Tensor) -> Generator[None, None, None]:
    """Context manager for setting background mode."""
    global BACKGROUND_COLOR_OVERRIDE
    old_background_color = BACKGROUND_COLOR_OVERRIDE
    try:
        BACKGROUND_COLOR_OVERRIDE = mode
        yield
    finally:
        BACKGROUND_COLOR_OVERRIDE = old_background_color


@dataclass
class Frustums:
    starts: Tensor
    ends: Tensor


@dataclass
class RaySamples:
    frustums: Frustums
    deltas: Tensor

    def get_weights(self, densities: Tensor) -> Tensor:
        delta_density = self.deltas * densities
        alphas = 1 - torch.exp(-delta_density)

        transmittance = torch.cumsum(delta_density[..., :-1, :], dim=-2)
        transmittance = torch.cat(
            [torch.zeros((*transmittance.shape[:1], 1, 1), device=densities.device), transmittance], dim=-2
        )
        transmittance = torch.exp(-transmittance)  # [..., "num_samples"]

        weights = alphas * transmittance  # [..., "num_samples"]
        weights = torch.nan_to_num(weights)

        return weights


class RGBRenderer(nn.Module):
    """Standard volumetric rendering.

    Args:
        background_color: Background color as RGB. Uses random colors if None.
    """

    def __init__(self, background_color: BackgroundColor = "random") -> None:
        super().__init__()
        self.background_color: BackgroundColor = background_color

    @classmethod
    def combine_rgb(
        cls,
        rgb: Tensor,
        weights: Tensor,
        background_color: BackgroundColor = "random",
        ray_indices: Optional[Tensor] = None,
        num_rays: Optional[int] = None,
    ) -> Tensor:
        """Composite samples along ray and render color image.
        If background color is random, no BG color is added - as if the background was black!
        """
        if ray_indices is not None and num_rays is not None:
            raise NotImplementedError("nerfacc packed samples are not part of this program")
        else:
            comp_rgb = torch.sum(weights * rgb, dim=-2)
            accumulated_weight = torch.sum(weights, dim=-2)
        if BACKGROUND_COLOR_OVERRIDE is not None:
            background_color = BACKGROUND_COLOR_OVERRIDE
        if background_color == "random":
            # If background color is random, the predicted color is returned without blending,
            # as if the background color was black.
            return comp_rgb
        elif background_color == "last_sample":
            # Note, this is only supported for non-packed samples.
            background_color = rgb[..., -1, :]
        background_color = cls.get_background_color(background_color, shape=comp_rgb.shape, device=comp_rgb.device)

        assert isinstance(background_color, torch.Tensor)
        comp_rgb = comp_rgb + background_color * (1.0 - accumulated_weight)
        return comp_rgb

    @classmethod
    def get_background_color(
        cls, background_color: BackgroundColor, shape: Tuple[int, ...], device: torch.device
    ) -> Tensor:
        """Returns the RGB background color for a specified background color."""
        assert background_color not in {"last_sample", "random"}
        assert shape[-1] == 3, "Background color must be RGB."
        if BACKGROUND_COLOR_OVERRIDE is not None:
            background_color = BACKGROUND_COLOR_OVERRIDE
        if isinstance(background_color, str) and background_color in COLORS_DICT:
            background_color = COLORS_DICT[background_color]
        assert isinstance(background_color, Tensor)

        # Ensure correct shape
        return background_color.expand(shape).to(device)

    def forward(
        self,
        rgb: Tensor,
        weights: Tensor,
        ray_indices: Optional[Tensor] = None,
        num_rays: Optional[int] = None,
        background_color: Optional[BackgroundColor] = None,
    ) -> Tensor:
        """Composite samples along ray and render color image"""

        if background_color is None:
            background_color = self.background_color

        if not self.training:
            rgb = torch.nan_to_num(rgb)
        rgb = self.combine_rgb(
            rgb, weights, background_color=background_color, ray_indices=ray_indices, num_rays=num_rays
        )
        if not self.training:
            torch.clamp_(rgb, min=0.0, max=1.0)
        return rgb


class AccumulationRenderer(nn.Module):
    """Accumulated value along a ray."""

    @classmethod
    def forward(
        cls,
        weights: Tensor,
        ray_indices: Optional[Tensor] = None,
        num_rays: Optional[int] = None,
    ) -> Tensor:
        """Composite samples along ray and calculate accumulation."""

        if ray_indices is not None and num_rays is not None:
            raise NotImplementedError("nerfacc packed samples are not part of this program")
        else:
            accumulation = torch.sum(weights, dim=-2)
        return accumulation


class DepthRenderer(nn.Module):
    """Calculate depth along ray."""

    def __init__(self, method: Literal["median", "expected"] = "median") -> None:
        super().__init__()
        self.method = method

    def forward(
        self,
        weights: Tensor,
        ray_samples: RaySamples,
        ray_indices: Optional[Tensor] = None,
        num_rays: Optional[int] = None,
    ) -> Tensor:
        """Composite samples along ray and calculate depths."""

        if self.method == "median":
            steps = (ray_samples.frustums.starts + ray_samples.frustums.ends) / 2

            if ray_indices is not None and num_rays is not None:
                raise NotImplementedError("Median depth calculation is not implemented for packed samples.")
            cumulative_weights = torch.cumsum(weights[..., 0], dim=-1)  # [..., num_samples]
            split = torch.ones((*weights.shape[:-2], 1), device=weights.device) * 0.5  # [..., 1]
            median_index = torch.searchsorted(cumulative_weights, split, side="left")  # [..., 1]
            median_index = torch.clamp(median_index, 0, steps.shape[-2] - 1)  # [..., 1]
            median_depth = torch.gather(steps[..., 0], dim=-1, index=median_index)  # [..., 1]
            return median_depth
        if self.method == "expected":
            eps = 1e-10
            steps = (ray_samples.frustums.starts + ray_samples.frustums.ends) / 2

            if ray_indices is not None and num_rays is not None:
                raise NotImplementedError("nerfacc packed samples are not part of this program")
            else:
                depth = torch.sum(weights * steps, dim=-2) / (torch.sum(weights, -2) + eps)

            depth = torch.clip(depth, steps.min(), steps.max())

            return depth

        raise NotImplementedError(f"Method {self.method} not implemented")


class RenderHead(nn.Module):
    """The renderer chain of nerfacto's get_outputs, fed by a field's density and rgb."""

    def __init__(self, background_color: BackgroundColor = "random", depth_method: str = "median"):
        super().__init__()
        self.renderer_rgb = RGBRenderer(background_color=background_color)
        self.renderer_accumulation = AccumulationRenderer()
        self.renderer_depth = DepthRenderer(method="median")
        self.renderer_expected_depth = DepthRenderer(method="expected")

    def forward(self, starts: Tensor, ends: Tensor, density: Tensor, rgb: Tensor, background_color=None):
        ray_samples = RaySamples(frustums=Frustums(starts=starts, ends=ends), deltas=ends - starts)
        weights = ray_samples.get_weights(density)
        outputs = {
            "rgb": self.renderer_rgb(rgb=rgb, weights=weights, background_color=background_color),
            "accumulation": self.renderer_accumulation(weights=weights),
            "depth": self.renderer_depth(weights=weights, ray_samples=ray_samples),
            "expected_depth": self.renderer_expected_depth(weights=weights, ray_samples=ray_samples),
        }
        return outputs


head = torch.compile(RenderHead(background_color="white").eval())


def make():
    torch.manual_seed(0)
    model = RenderHead(background_color="white").eval()
    bins = torch.sort(torch.rand(4, 7), dim=-1).values * 4.0 + 0.5
    starts, ends = bins[:, :-1, None], bins[:, 1:, None]
    density = torch.rand(4, 6, 1) * 2.0
    rgb = torch.rand(4, 6, 3)
    return model, [
        (starts, ends, density, rgb),
        (starts, ends, density, rgb, "random"),
        (starts, ends, density, rgb, "last_sample"),
        (starts, ends, density, rgb, torch.tensor([0.2, 0.4, 0.6])),
    ]
