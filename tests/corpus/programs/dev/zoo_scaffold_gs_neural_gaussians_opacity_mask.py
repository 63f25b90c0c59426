"""Scaffold-GS generate_neural_gaussians: anchors filtered by a visibility mask, MLP-decoded offsets kept where `neural_opacity > 0` (boolean-mask selection of a data-dependent count).

Source: city-super/Scaffold-GS@e30224304799cb84bc50db02e61b7fe873f8ad23:gaussian_renderer/__init__.py:generate_neural_gaussians
Kept: generate_neural_gaussians as written (the `visible_mask is None`
default, anchor attributes indexed by the mask, view direction/distance,
the use_feat_bank multi-resolution feature mix, opacity/color/cov MLPs,
`mask = (neural_opacity>0.0)`, the concatenate-then-mask-then-split of the
per-offset attributes, scaling and rotation post-processing, the
is_training 7-tuple vs 5-tuple return).
Simplified: GaussianModel is a stand-in written after scene/gaussian_model.py
(plain class with the anchor tensors, the four MLPs and the get_* properties,
exp scaling, normalize rotation); einops.repeat('n (c) -> (n k) (c)') is a
local helper; the camera is a namespace with camera_center; the CUDA
rasterizer part of render() is left out. 12 anchors, feat_dim 8, 4 offsets.
"""
import types

import torch
import torch.nn as nn


def repeat(tensor, pattern, k):
    """Stand-in for einops.repeat(tensor, 'n (c) -> (n k) (c)', k=k)."""
    n, c = tensor.shape
    return tensor.unsqueeze(1).expand(n, k, c).reshape(n * k, c)


class GaussianModel:
    def __init__(self, feat_dim=8, n_offsets=4, use_feat_bank=True, num_anchors=12):
        self.feat_dim = feat_dim
        self.n_offsets = n_offsets
        self.use_feat_bank = use_feat_bank

        self._anchor = torch.randn(num_anchors, 3)
        self._offset = 0.1 * torch.randn(num_anchors, n_offsets, 3)
        self._anchor_feat = torch.randn(num_anchors, feat_dim)
        self._scaling = torch.log(0.1 * torch.ones(num_anchors, 6))

        self.scaling_activation = torch.exp
        self.rotation_activation = torch.nn.functional.normalize

        if self.use_feat_bank:
            self.mlp_feature_bank = nn.Sequential(
                nn.Linear(3+1, feat_dim),
                nn.ReLU(True),
                nn.Linear(feat_dim, 3),
                nn.Softmax(dim=1)
            )

        self.mlp_opacity = nn.Sequential(
            nn.Linear(feat_dim+3+1, feat_dim),
            nn.ReLU(True),
            nn.Linear(feat_dim, n_offsets),
            nn.Tanh()
        )

        self.mlp_cov = nn.Sequential(
            nn.Linear(feat_dim+3+1, feat_dim),
            nn.ReLU(True),
            nn.Linear(feat_dim, 7*self.n_offsets),
        )

        self.mlp_color = nn.Sequential(
            nn.Linear(feat_dim+3+1, feat_dim),
            nn.ReLU(True),
            nn.Linear(feat_dim, 3*self.n_offsets),
            nn.Sigmoid()
        )

    @property
    def get_scaling(self):
        return 1.0*self.scaling_activation(self._scaling)

    @property
    def get_featurebank_mlp(self):
        return self.mlp_feature_bank

    @property
    def get_opacity_mlp(self):
        return self.mlp_opacity

    @property
    def get_cov_mlp(self):
        return self.mlp_cov

    @property
    def get_color_mlp(self):
        return self.mlp_color

    @property
    def get_anchor(self):
        return self._anchor


def generate_neural_gaussians(viewpoint_camera, pc : GaussianModel, visible_mask=None, is_training=False):
    ## view frustum filtering for acceleration
    if visible_mask is None:
        visible_mask = torch.ones(pc.get_anchor.shape[0], dtype=torch.bool, device = pc.get_anchor.device)

    feat = pc._anchor_feat[visible_mask]
    anchor = pc.get_anchor[visible_mask]
    grid_offsets = pc._offset[visible_mask]
    grid_scaling = pc.get_scaling[visible_mask]

    ## get view properties for anchor
    ob_view = anchor - viewpoint_camera.camera_center
    # dist
    ob_dist = ob_view.norm(dim=1, keepdim=True)
    # view
    ob_view = ob_view / ob_dist

    ## view-adaptive feature
    if pc.use_feat_bank:
        cat_view = torch.cat([ob_view, ob_dist], dim=1)

        bank_weight = pc.get_featurebank_mlp(cat_view).unsqueeze(dim=1) # [n, 1, 3]

        ## multi-resolution feat
        feat = feat.unsqueeze(dim=-1)
        feat = feat[:,::4, :1].repeat([1,4,1])*bank_weight[:,:,:1] + \
            feat[:,::2, :1].repeat([1,2,1])*bank_weight[:,:,1:2] + \
            feat[:,::1, :1]*bank_weight[:,:,2:]
        feat = feat.squeeze(dim=-1) # [n, c]

    cat_local_view = torch.cat([feat, ob_view, ob_dist], dim=1) # [N, c+3]

    # get offset's opacity
    neural_opacity = pc.get_opacity_mlp(cat_local_view) # [N, k]

    # opacity mask generation
    neural_opacity = neural_opacity.reshape([-1, 1])
    mask = (neural_opacity>0.0)
    mask = mask.view(-1)

    # select opacity
    opacity = neural_opacity[mask]

    # get offset's color
    color = pc.get_color_mlp(cat_local_view)
    color = color.reshape([anchor.shape[0]*pc.n_offsets, 3])# [mask]

    # get offset's cov
    scale_rot = pc.get_cov_mlp(cat_local_view)
    scale_rot = scale_rot.reshape([anchor.shape[0]*pc.n_offsets, 7]) # [mask]

    # offsets
    offsets = grid_offsets.view([-1, 3]) # [mask]

    # combine for parallel masking
    concatenated = torch.cat([grid_scaling, anchor], dim=-1)
    concatenated_repeated = repeat(concatenated, 'n (c) -> (n k) (c)', k=pc.n_offsets)
    concatenated_all = torch.cat([concatenated_repeated, color, scale_rot, offsets], dim=-1)
    masked = concatenated_all[mask]
    scaling_repeat, repeat_anchor, color, scale_rot, offsets = masked.split([6, 3, 3, 7, 3], dim=-1)

    # post-process cov
    scaling = scaling_repeat[:,3:] * torch.sigmoid(scale_rot[:,:3]) # * (1+torch.sigmoid(repeat_dist))
    rot = pc.rotation_activation(scale_rot[:,3:7])

    # post-process offsets to get centers for gaussians
    offsets = offsets * scaling_repeat[:,:3]
    xyz = repeat_anchor + offsets

    if is_training:
        return xyz, color, opacity, scaling, rot, neural_opacity, mask
    else:
        return xyz, color, opacity, scaling, rot


neural_gaussians = torch.compile(generate_neural_gaussians)


def make():
    torch.manual_seed(0)
    pc = GaussianModel()
    camera = types.SimpleNamespace(camera_center=torch.tensor([0.0, 0.0, -4.0]))
    visible = torch.rand(12) > 0.3
    return generate_neural_gaussians, [(camera, pc), (camera, pc, visible, True)]
