"""GM404 bad: Autoformer's delay aggregation gathers the series at each of its top-k delays, one by one.

`index` holds the top `k` positions along the last dim of a 1-d mean, so `index[i]` for `i in range(k)` is a
0-d tensor, and indexing with it copies it to a Python int (GB0033).
"""
import math

import torch


def aggregate_delays(values: torch.Tensor, corr: torch.Tensor, factor: int = 1) -> torch.Tensor:
    top_k = int(factor * math.log(values.shape[-1]))
    mean_value = torch.mean(corr, dim=1)
    index = torch.topk(torch.mean(mean_value, dim=0), top_k, dim=-1)[1]
    weights = torch.stack([mean_value[:, index[i]] for i in range(top_k)], dim=-1)
    return torch.softmax(weights, dim=-1)


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    return aggregate_delays, [(torch.randn(2, 3, 8), torch.randn(2, 3, 8))]


compiled = torch.compile(aggregate_delays)

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
