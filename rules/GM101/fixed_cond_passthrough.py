"""GM101 bad: a tensor-valued `if` that runs a submodule on one side and passes its input through unchanged on the other."""
import torch
from torch import nn


class SkippableBlock(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.block = nn.Linear(dim, dim)

    def forward(self, x):
        # expect: GM101
        def _gm_cond_true_12(x):
            return self.block(x)

        def _gm_cond_false_12(x):
            return x.clone()

        h = torch.cond(x.norm() > 4.0, _gm_cond_true_12, _gm_cond_false_12, (x,))
        return h + 1


def make():
    """Return (eager_callable, input_sets) where input_sets together take EVERY branch."""
    return SkippableBlock(), [(torch.ones(4, 8),), (torch.full((4, 8), 0.1),)]


compiled = torch.compile(SkippableBlock())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
