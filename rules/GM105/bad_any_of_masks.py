"""GM105 bad: a detection head that skips work when no box survives, asking `any()` over a
generator of per-image tensor conditions, and that ranks its images with a tensor sort key.

`any()` takes the truth of each item, a 0-d tensor: Dynamo breaks at the call
("Data-dependent branching", GB0170, with "Generator reconstruction with mutations",
GB8335, for the generator). `sorted` compares tensor keys on the host ("sort with
non-constant keys", GB0207).
"""
import torch
from torch import nn


class BoxHead(nn.Module):
    def __init__(self, dim: int = 4) -> None:
        super().__init__()
        self.score = nn.Linear(dim, 1)

    def forward(self, feats: torch.Tensor) -> torch.Tensor:
        scores = self.score(feats).squeeze(-1).sigmoid()
        ranked = sorted(scores.unbind(0), key=lambda s: s.sum())
        if not any(s.max() > 0.5 for s in ranked):
            return scores * 0
        return torch.stack(ranked)


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    return BoxHead(), [(torch.randn(2, 3, 4),)]


head = torch.compile(BoxHead())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
