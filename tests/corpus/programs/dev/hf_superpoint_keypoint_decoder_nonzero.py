"""SuperPoint keypoint decoder: NMS by max-pool, then `torch.nonzero(scores[0] > threshold)`, border mask indexing and a `len(keypoints)` top-k check.

Source: huggingface/transformers@v5.23.0:src/transformers/models/superpoint/modeling_superpoint.py:37-70,187-256
Kept: remove_keypoints_from_borders, top_k_keypoints, simple_nms verbatim and
SuperPointInterestPointDecoder (score head, 8x8 pixel shuffle reshape,
_extract_keypoints with the config plumbing).
Simplified: encoder output is the input (4 channels, 2x2 cells -> 16x16 scores).
"""
import torch
from torch import nn


def remove_keypoints_from_borders(keypoints, scores, border: int, height: int, width: int):
    """Removes keypoints (and their associated scores) that are too close to the border"""
    mask_h = (keypoints[:, 0] >= border) & (keypoints[:, 0] < (height - border))
    mask_w = (keypoints[:, 1] >= border) & (keypoints[:, 1] < (width - border))
    mask = mask_h & mask_w
    return keypoints[mask], scores[mask]


def top_k_keypoints(keypoints, scores, k: int):
    """Keeps the k keypoints with highest score"""
    if k >= len(keypoints):
        return keypoints, scores
    scores, indices = torch.topk(scores, k, dim=0)
    return keypoints[indices], scores


def simple_nms(scores, nms_radius: int):
    """Applies non-maximum suppression on scores"""
    if nms_radius < 0:
        raise ValueError("Expected positive values for nms_radius")

    def max_pool(x):
        return nn.functional.max_pool2d(x, kernel_size=nms_radius * 2 + 1, stride=1, padding=nms_radius)

    zeros = torch.zeros_like(scores)
    max_mask = scores == max_pool(scores)
    for _ in range(2):
        supp_mask = max_pool(max_mask.float()) > 0
        supp_scores = torch.where(supp_mask, zeros, scores)
        new_max_mask = supp_scores == max_pool(supp_scores)
        max_mask = max_mask | (new_max_mask & (~supp_mask))
    return torch.where(max_mask, scores, zeros)


class SuperPointConfig:
    encoder_hidden_sizes = [4]
    decoder_hidden_size = 8
    keypoint_decoder_dim = 65
    keypoint_threshold = 0.012
    max_keypoints = 30
    nms_radius = 1
    border_removal_distance = 1


class SuperPointInterestPointDecoder(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.keypoint_threshold = config.keypoint_threshold
        self.max_keypoints = config.max_keypoints
        self.nms_radius = config.nms_radius
        self.border_removal_distance = config.border_removal_distance

        self.relu = nn.ReLU(inplace=True)
        self.conv_score_a = nn.Conv2d(config.encoder_hidden_sizes[-1], config.decoder_hidden_size, kernel_size=3, stride=1, padding=1)
        self.conv_score_b = nn.Conv2d(config.decoder_hidden_size, config.keypoint_decoder_dim, kernel_size=1, stride=1, padding=0)

    def forward(self, encoded):
        scores = self._get_pixel_scores(encoded)
        keypoints, scores = self._extract_keypoints(scores)
        return keypoints, scores

    def _get_pixel_scores(self, encoded):
        scores = self.relu(self.conv_score_a(encoded))
        scores = self.conv_score_b(scores)
        scores = nn.functional.softmax(scores, 1)[:, :-1]
        batch_size, _, height, width = scores.shape
        scores = scores.permute(0, 2, 3, 1).reshape(batch_size, height, width, 8, 8)
        scores = scores.permute(0, 1, 3, 2, 4).reshape(batch_size, height * 8, width * 8)
        scores = simple_nms(scores, self.nms_radius)
        return scores

    def _extract_keypoints(self, scores):
        _, height, width = scores.shape

        keypoints = torch.nonzero(scores[0] > self.keypoint_threshold)
        scores = scores[0][tuple(keypoints.t())]

        keypoints, scores = remove_keypoints_from_borders(
            keypoints, scores, self.border_removal_distance, height * 8, width * 8
        )

        if self.max_keypoints >= 0:
            keypoints, scores = top_k_keypoints(keypoints, scores, self.max_keypoints)

        keypoints = torch.flip(keypoints, [1]).to(scores.dtype)
        return keypoints, scores


decoder = torch.compile(SuperPointInterestPointDecoder(SuperPointConfig()).eval())


def make():
    torch.manual_seed(0)
    return SuperPointInterestPointDecoder(SuperPointConfig()).eval(), [(torch.randn(1, 4, 2, 2) * 3,), (torch.randn(1, 4, 1, 1) * 3,)]
