"""GM523 negative: in-place shape changes of tensors the graph computed, and the rebinding form on an input.

Nothing here may be flagged, and Dynamo must not break.
"""
import torch


def broadcast(pred: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    mask = mask.unsqueeze(1)
    scores = pred.softmax(dim=1)
    weights = scores.sum(1)
    weights.unsqueeze_(1)
    row = pred[0]
    row.transpose_(0, 1)
    return scores * mask * weights + row.sum()


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    return broadcast, [(torch.randn(2, 3, 4, 4), torch.rand(2, 4, 4) > 0.2)]


compiled = torch.compile(broadcast)

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
