"""GM505 bad: DETR's Hungarian matcher, a list comprehension over `enumerate(...)` whose helper breaks.

Source: facebookresearch/detr@main:models/matcher.py (HungarianMatcher.forward)
`linear_sum_assignment` (scipy in DETR; here a greedy stand-in that reads the cost into Python the same way)
needs the cost's values, so the body breaks in the helper (GB0033 at `.tolist()`);
Dynamo then compiles the comprehension's frame on its own and breaks on the enumerate iterator (GB8335).
"""
import torch
from torch import nn


def linear_sum_assignment(cost: torch.Tensor) -> tuple[list, list]:
    rows = cost.argmin(0).tolist()
    return rows, list(range(len(rows)))


class HungarianMatcher(nn.Module):
    def forward(self, out_bbox: torch.Tensor, tgt_bbox: torch.Tensor, sizes: list) -> list:
        cost = torch.cdist(out_bbox, tgt_bbox, p=1)
        return [linear_sum_assignment(c) for i, c in enumerate(cost.split(sizes, -1))]


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    return HungarianMatcher(), [(torch.rand(4, 4), torch.rand(3, 4), [1, 2])]


compiled = torch.compile(HungarianMatcher())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
