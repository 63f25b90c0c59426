"""GM401 bad: a NaN-ignoring mean, `scores[valid].mean()` with `valid = ~torch.isnan(scores)`."""
import torch


def nan_ignoring_mean(scores: torch.Tensor) -> torch.Tensor:
    valid = ~torch.isnan(scores)
    mean = torch.where(valid, scores, 0).sum() / valid.sum()
    return mean * 2


def make():
    """Return (eager_callable, input_sets): some NaN, all NaN (all-false mask), no NaN, empty."""
    torch.manual_seed(0)
    some = torch.randn(10)
    some[::3] = float("nan")
    return nan_ignoring_mean, [
        (some,),
        (torch.full((5,), float("nan")),),
        (torch.randn(7),),
        (torch.randn(0),),
    ]


compiled = torch.compile(nan_ignoring_mean)

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
