"""GM204 bad: a beam step that keeps its candidates in a Python heap inside the compiled
function (the shape of small beam-search decoders that push `(score, token)` pairs).

`heapq` is a module Dynamo skips: `heapq.heappush` ends the graph ("Attempted to call
function marked as skipped", GB0007).
"""
import heapq

import torch
from torch import nn


class BeamStep(nn.Module):
    def __init__(self, dim: int = 4, vocab: int = 5) -> None:
        super().__init__()
        self.out = nn.Linear(dim, vocab)

    def forward(self, h: torch.Tensor, beams: list) -> torch.Tensor:
        logits = self.out(h).log_softmax(-1)
        heapq.heappush(beams, (0.0, 0))
        return logits * len(beams)


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    return BeamStep(), [(torch.randn(2, 4), [(-1.0, 3)])]


step = torch.compile(BeamStep())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
