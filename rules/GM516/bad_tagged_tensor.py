"""GM516 bad: an output tagged as a tensor subclass by assigning its `__class__`.

Dynamo refuses to set a tensor's class ("Failed to set tensor attribute", GB0058).
"""
import torch


class Scores(torch.Tensor):
    pass


@torch.compile
def score(x: torch.Tensor) -> torch.Tensor:
    logits = x.softmax(-1)
    logits.__class__ = Scores
    return logits * 2


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    return score._torchdynamo_orig_callable, [(torch.randn(2, 4),)]


if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
