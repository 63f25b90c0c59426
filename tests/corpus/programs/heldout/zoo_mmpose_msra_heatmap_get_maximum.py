"""mmpose's top-down heatmap prediction: the head's output goes through `to_numpy` (`x.detach().cpu().numpy()`), then MSRAHeatmap.decode runs `get_heatmap_maximum` and `refine_keypoints`, whose per-keypoint bounds checks compare NumPy values.

Source: open-mmlab/mmpose@24bd295cb5a45fc1d8613254b51d2ab382adb1fc:mmpose/codecs/msra_heatmap.py:14-140 (get_heatmap_maximum from mmpose/codecs/utils/post_processing.py@0b9a7cfc46dc9354caff604c7fe465fe590ece54; refine_keypoints from mmpose/codecs/utils/refinement.py; to_numpy from mmpose/utils/tensor_utils.py; BaseHead.decode, HeatmapHead.forward/predict, TopdownPoseEstimator.predict)
Kept: MSRAHeatmap's scale_factor and decode (biased path), the argmax/
unravel_index maximum with its `locs[vals <= 0.] = -1`, refine_keypoints'
quarter-pixel shift, to_numpy's tensor/sequence cases, the head's
decode loop packing InstanceData, predict's output_heatmaps option and the
estimator's test_cfg plumbing.
Simplified: no registry, flip test, DARK refinement or data-sample
metainfo; InstanceData/PixelData are small attribute holders; a 1-conv
backbone, 3 keypoints on 8x6 heatmaps for 32x24 inputs.
"""
from itertools import product
from typing import Optional, Tuple

import numpy as np
import torch
from torch import Tensor, nn


def is_seq_of(seq, expected_type):
    return isinstance(seq, (list, tuple)) and all(isinstance(item, expected_type) for item in seq)


def to_numpy(x, return_device=False, unzip=False):
    """Convert torch tensor to numpy.ndarray."""
    if isinstance(x, Tensor):
        arrays = x.detach().cpu().numpy()
        device = x.device
    elif isinstance(x, np.ndarray) or is_seq_of(x, np.ndarray):
        arrays = x
        device = 'cpu'
    elif is_seq_of(x, Tensor):
        if unzip:
            # convert (A, B) -> [(A[0], B[0]), (A[1], B[1]), ...]
            arrays = [
                tuple(to_numpy(_x[None, :]) for _x in _each)
                for _each in zip(*x)
            ]
        else:
            arrays = [to_numpy(_x) for _x in x]

        device = x[0].device

    else:
        raise ValueError(f'Invalid input type {type(x)}')

    if return_device:
        return arrays, device
    else:
        return arrays


def get_heatmap_maximum(heatmaps: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """Get maximum response location and value from heatmaps."""
    assert isinstance(heatmaps,
                      np.ndarray), ('heatmaps should be numpy.ndarray')
    assert heatmaps.ndim == 3 or heatmaps.ndim == 4, (
        f'Invalid shape {heatmaps.shape}')

    if heatmaps.ndim == 3:
        K, H, W = heatmaps.shape
        B = None
        heatmaps_flatten = heatmaps.reshape(K, -1)
    else:
        B, K, H, W = heatmaps.shape
        heatmaps_flatten = heatmaps.reshape(B * K, -1)

    y_locs, x_locs = np.unravel_index(
        np.argmax(heatmaps_flatten, axis=1), shape=(H, W))
    locs = np.stack((x_locs, y_locs), axis=-1).astype(np.float32)
    vals = np.amax(heatmaps_flatten, axis=1)
    locs[vals <= 0.] = -1

    if B:
        locs = locs.reshape(B, K, 2)
        vals = vals.reshape(B, K)

    return locs, vals


def refine_keypoints(keypoints: np.ndarray,
                     heatmaps: np.ndarray) -> np.ndarray:
    """Refine keypoint predictions by moving from the maximum towards the
    second maximum by 0.25 pixel."""
    N, K = keypoints.shape[:2]
    H, W = heatmaps.shape[1:]

    for n, k in product(range(N), range(K)):
        x, y = keypoints[n, k, :2].astype(int)

        if 1 < x < W - 1 and 0 < y < H:
            dx = heatmaps[k, y, x + 1] - heatmaps[k, y, x - 1]
        else:
            dx = 0.

        if 1 < y < H - 1 and 0 < x < W:
            dy = heatmaps[k, y + 1, x] - heatmaps[k, y - 1, x]
        else:
            dy = 0.

        keypoints[n, k] += np.sign([dx, dy], dtype=np.float32) * 0.25

    return keypoints


class MSRAHeatmap:
    """Represent keypoints as heatmaps via "MSRA" approach."""

    support_batch_decoding = False

    def __init__(self,
                 input_size: Tuple[int, int],
                 heatmap_size: Tuple[int, int],
                 sigma: float,
                 unbiased: bool = False,
                 blur_kernel_size: int = 11) -> None:
        super().__init__()
        self.input_size = input_size
        self.heatmap_size = heatmap_size
        self.sigma = sigma
        self.unbiased = unbiased
        self.blur_kernel_size = blur_kernel_size
        self.scale_factor = (np.array(input_size) /
                             heatmap_size).astype(np.float32)

    def decode(self, encoded: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
        """Decode keypoint coordinates from heatmaps (K, H, W)."""
        heatmaps = encoded.copy()
        K, H, W = heatmaps.shape

        keypoints, scores = get_heatmap_maximum(heatmaps)

        # Unsqueeze the instance dimension for single-instance results
        keypoints, scores = keypoints[None], scores[None]

        keypoints = refine_keypoints(keypoints, heatmaps)

        # Restore the keypoint scales
        keypoints = keypoints * self.scale_factor

        return keypoints, scores


class InstanceData:
    def __init__(self, **fields):
        self.__dict__.update(fields)


class PixelData(InstanceData):
    pass


class HeatmapHead(nn.Module):
    def __init__(self, in_channels: int, out_channels: int, decoder: Optional[MSRAHeatmap] = None):
        super().__init__()
        self.deconv_layers = nn.Sequential(
            nn.ConvTranspose2d(in_channels, 8, kernel_size=4, stride=2, padding=1), nn.ReLU())
        self.conv_layers = nn.Identity()
        self.final_layer = nn.Conv2d(8, out_channels, kernel_size=1)
        self.decoder = decoder

    def forward(self, feats: Tuple[Tensor]) -> Tensor:
        x = feats[-1]
        x = self.deconv_layers(x)
        x = self.conv_layers(x)
        x = self.final_layer(x)
        return x

    def decode(self, batch_outputs):
        def _pack_and_call(args, func):
            if not isinstance(args, tuple):
                args = (args, )
            return func(*args)

        if self.decoder is None:
            raise RuntimeError(
                f'The decoder has not been set in {self.__class__.__name__}. '
                'Please set the decoder configs in the init parameters to '
                'enable head methods `head.predict()` and `head.decode()`')

        batch_output_np = to_numpy(batch_outputs, unzip=True)
        batch_keypoints = []
        batch_scores = []
        for outputs in batch_output_np:
            keypoints, scores = _pack_and_call(outputs, self.decoder.decode)
            batch_keypoints.append(keypoints)
            batch_scores.append(scores)

        preds = [
            InstanceData(keypoints=keypoints, keypoint_scores=scores)
            for keypoints, scores in zip(batch_keypoints, batch_scores)
        ]

        return preds

    def predict(self, feats, batch_data_samples, test_cfg={}):
        batch_heatmaps = self.forward(feats)

        preds = self.decode(batch_heatmaps)

        if test_cfg.get('output_heatmaps', False):
            pred_fields = [
                PixelData(heatmaps=hm) for hm in batch_heatmaps.detach()
            ]
            return preds, pred_fields
        else:
            return preds


class TopdownPoseEstimator(nn.Module):
    def __init__(self, test_cfg=None):
        super().__init__()
        self.backbone = nn.Sequential(nn.Conv2d(3, 4, 3, stride=8, padding=1), nn.ReLU())
        self.head = HeatmapHead(4, 3, decoder=MSRAHeatmap(input_size=(24, 32), heatmap_size=(6, 8), sigma=2.0))
        self.test_cfg = test_cfg if test_cfg is not None else {}

    def extract_feat(self, inputs):
        return (self.backbone(inputs), )

    def forward(self, inputs, data_samples=None, output_heatmaps=False):
        test_cfg = dict(self.test_cfg, output_heatmaps=output_heatmaps)
        feats = self.extract_feat(inputs)
        preds = self.head.predict(feats, data_samples, test_cfg=test_cfg)
        if isinstance(preds, tuple):
            batch_pred_instances, batch_pred_fields = preds
        else:
            batch_pred_instances = preds
            batch_pred_fields = None
        keypoints = np.stack([p.keypoints for p in batch_pred_instances])
        scores = np.stack([p.keypoint_scores for p in batch_pred_instances])
        return keypoints, scores, batch_pred_fields


pose_estimator = torch.compile(TopdownPoseEstimator().eval())


def make():
    torch.manual_seed(0)
    images = torch.randn(2, 3, 32, 24)
    return TopdownPoseEstimator().eval(), [(images,), (images[:1], None, True)]
