"""GM301: a Python list repeated a tensor number of times, and `linspace` steps given a tensor (GB0033).

Qwen2.5-Omni's audio encoder sizes its chunks with `[n_window * 2] * chunk_num.sum()`, and PointPillars
spaces its anchors with `torch.linspace(lo, hi, feature_map_size[1] + 1)` on a tensor of the map size.
Python reads the repeat count, and torch the step count, as a number: Dynamo copies the tensor to the host.
"""
import torch
from torch import nn


class ChunkAnchors(nn.Module):
    def __init__(self, n_window: int = 2) -> None:
        super().__init__()
        self.n_window = n_window

    def forward(self, feature_lens: torch.Tensor, features: torch.Tensor) -> torch.Tensor:
        feature_map_size = torch.tensor(list(features.size()[-2:]))
        centers = torch.linspace(0.0, 1.0, feature_map_size[1] + 1)
        chunk_num = torch.ceil(feature_lens / (self.n_window * 2)).long()
        chunk_lengths = torch.tensor([self.n_window * 2] * chunk_num.sum(), dtype=torch.long)
        return chunk_lengths.sum() + centers.sum()


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    return ChunkAnchors(), [(torch.tensor([5, 9]), torch.randn(1, 3, 4))]


compiled = torch.compile(ChunkAnchors())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
