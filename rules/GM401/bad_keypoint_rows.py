"""GM401 bad: SuperPoint keeps the pixels whose score passes a threshold, then reads their scores.

`tuple(keypoints.t())` splits the hit matrix into one index vector per image
dimension: a static count, so the capture switch traces the whole function.
Source: huggingface/transformers@v5.23.0:src/transformers/models/superpoint/modeling_superpoint.py:37-44,236-250
"""
import torch


def remove_keypoints_from_borders(keypoints, scores, border: int, height: int, width: int):
    mask_h = (keypoints[:, 0] >= border) & (keypoints[:, 0] < (height - border))
    mask_w = (keypoints[:, 1] >= border) & (keypoints[:, 1] < (width - border))
    mask = mask_h & mask_w
    return keypoints[mask], scores[mask]


def extract_keypoints(scores: torch.Tensor, threshold: float = 0.5, border: int = 1):
    _, height, width = scores.shape
    keypoints = torch.nonzero(scores[0] > threshold)
    scores = scores[0][tuple(keypoints.t())]
    keypoints, scores = remove_keypoints_from_borders(keypoints, scores, border, height, width)
    return torch.flip(keypoints, [1]).to(scores.dtype), scores


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    return extract_keypoints, [(torch.rand(1, 6, 6),), (torch.zeros(1, 6, 6),)]


compiled = torch.compile(extract_keypoints)

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
