"""Depth Pro infer(): resize when H/W differ from img_size, focal length from the FOV head unless f_px is given, metric depth.

Source: apple/ml-depth-pro@9efe5c1def37a26c5367a71df664b18e1306c708:src/depth_pro/depth_pro.py:213-298
Kept: DepthPro.forward (shape assert, hasattr(self, "fov") plumbing,
features_0.detach()) and DepthPro.infer verbatim (3-D input unsqueeze, the
`resize` flag and both interpolations, `f_px is None` -> tan/deg2rad focal,
f_px.squeeze(), clamp); FOVNetwork verbatim from
src/depth_pro/network/fov.py:11-76 (without a fov encoder, so
fov_head0 + fov_head).
Simplified: img_size 48; the ViT encoder, multires decoder and depth head
are single-conv stand-ins returning features of the right shapes;
num_features 16.
"""
from typing import Mapping, Optional, Tuple, Union

import torch
from torch import nn
from torch.nn import functional as F


class FOVNetwork(nn.Module):
    """Field of View estimation network."""

    def __init__(
        self,
        num_features: int,
        fov_encoder: Optional[nn.Module] = None,
    ):
        super().__init__()

        # Create FOV head.
        fov_head0 = [
            nn.Conv2d(
                num_features, num_features // 2, kernel_size=3, stride=2, padding=1
            ),  # 128 x 24 x 24
            nn.ReLU(True),
        ]
        fov_head = [
            nn.Conv2d(
                num_features // 2, num_features // 4, kernel_size=3, stride=2, padding=1
            ),  # 64 x 12 x 12
            nn.ReLU(True),
            nn.Conv2d(
                num_features // 4, num_features // 8, kernel_size=3, stride=2, padding=1
            ),  # 32 x 6 x 6
            nn.ReLU(True),
            nn.Conv2d(num_features // 8, 1, kernel_size=6, stride=1, padding=0),
        ]
        if fov_encoder is not None:
            self.encoder = nn.Sequential(
                fov_encoder, nn.Linear(fov_encoder.embed_dim, num_features // 2)
            )
            self.downsample = nn.Sequential(*fov_head0)
        else:
            fov_head = fov_head0 + fov_head
        self.head = nn.Sequential(*fov_head)

    def forward(self, x: torch.Tensor, lowres_feature: torch.Tensor) -> torch.Tensor:
        if hasattr(self, "encoder"):
            x = F.interpolate(
                x,
                size=None,
                scale_factor=0.25,
                mode="bilinear",
                align_corners=False,
            )
            x = self.encoder(x)[:, 1:].permute(0, 2, 1)
            lowres_feature = self.downsample(lowres_feature)
            x = x.reshape_as(lowres_feature) + lowres_feature
        else:
            x = lowres_feature
        return self.head(x)


class EncoderStandIn(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.conv = nn.Conv2d(3, dim, 3, padding=1)

    def forward(self, x):
        return [self.conv(x)]


class DecoderStandIn(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.conv = nn.Conv2d(dim, dim, 3, padding=1)

    def forward(self, encodings):
        features_0 = encodings[0]
        return self.conv(features_0), features_0


class DepthPro(nn.Module):
    def __init__(self, encoder, decoder, last_dims=(8, 1), use_fov_head=True, fov_encoder=None, img_size=48):
        super().__init__()
        self.encoder = encoder
        self.decoder = decoder
        self._img_size = img_size
        dim_decoder = 16
        self.head = nn.Sequential(
            nn.Conv2d(dim_decoder, last_dims[0], kernel_size=3, stride=1, padding=1),
            nn.ReLU(True),
            nn.Conv2d(last_dims[0], last_dims[1], kernel_size=1, stride=1, padding=0),
            nn.ReLU(),
        )
        if use_fov_head:
            self.fov = FOVNetwork(num_features=dim_decoder, fov_encoder=fov_encoder)

    @property
    def img_size(self) -> int:
        """Return the internal image size of the network."""
        return self._img_size

    def forward(self, x: torch.Tensor) -> Tuple[torch.Tensor, Optional[torch.Tensor]]:
        _, _, H, W = x.shape
        assert H == self.img_size and W == self.img_size

        encodings = self.encoder(x)
        features, features_0 = self.decoder(encodings)
        canonical_inverse_depth = self.head(features)

        fov_deg = None
        if hasattr(self, "fov"):
            fov_deg = self.fov.forward(x, features_0.detach())

        return canonical_inverse_depth, fov_deg

    @torch.no_grad()
    def infer(
        self,
        x: torch.Tensor,
        f_px: Optional[Union[float, torch.Tensor]] = None,
        interpolation_mode="bilinear",
    ) -> Mapping[str, torch.Tensor]:
        if len(x.shape) == 3:
            x = x.unsqueeze(0)
        _, _, H, W = x.shape
        resize = H != self.img_size or W != self.img_size

        if resize:
            x = nn.functional.interpolate(
                x,
                size=(self.img_size, self.img_size),
                mode=interpolation_mode,
                align_corners=False,
            )

        canonical_inverse_depth, fov_deg = self.forward(x)
        if f_px is None:
            f_px = 0.5 * W / torch.tan(0.5 * torch.deg2rad(fov_deg.to(torch.float)))

        inverse_depth = canonical_inverse_depth * (W / f_px)
        f_px = f_px.squeeze()

        if resize:
            inverse_depth = nn.functional.interpolate(
                inverse_depth, size=(H, W), mode=interpolation_mode, align_corners=False
            )

        depth = 1.0 / torch.clamp(inverse_depth, min=1e-4, max=1e4)

        return {
            "depth": depth.squeeze(),
            "focallength_px": f_px,
        }


def create_model():
    model = DepthPro(encoder=EncoderStandIn(16), decoder=DecoderStandIn(16), use_fov_head=True)
    model.eval()
    return model


model = create_model()
infer = torch.compile(model.infer)


def make():
    torch.manual_seed(0)
    m = create_model()
    return m.infer, [
        (torch.rand(3, 40, 56),),
        (torch.rand(1, 3, 48, 48), torch.tensor(60.0)),
    ]
