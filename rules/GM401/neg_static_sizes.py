"""GM401 negative: the static-size spellings next to the data-dependent ones.

`one_hot` with `num_classes`, pairs from `torch.triu_indices` (what `torch.combinations`
returns, with a size Dynamo knows), `repeat_interleave` with Python-int repeats (also
as the `self_int` aten overload), `aten.index` with an integer index and a list-of-ints
index all have sizes Dynamo knows. Nothing here may be flagged, and Dynamo must not break.
"""
import torch
import torch.nn.functional as F


def pair_features(points: torch.Tensor, labels: torch.Tensor, num_classes: int = 3) -> torch.Tensor:
    n = points.shape[0]
    first, second = torch.triu_indices(n, n, 1)
    pairs = torch.stack((points[first], points[second]), -1)
    target = F.one_hot(labels, num_classes=num_classes)
    doubled = torch.ops.aten.repeat_interleave.self_int(points, 2)
    gathered = torch.ops.aten.index.Tensor(points, [labels])
    return pairs.sum() + target.sum() + doubled.sum() + gathered.sum() + points[[0, 2]].sum()


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    return pair_features, [(torch.randn(4), torch.tensor([0, 2, 1, 2]))]


compiled = torch.compile(pair_features)

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
