"""GM101 bad: a tensor-valued `if` whose branches each call two submodules and assign two names (a tuple from `torch.cond`)."""
import torch
from torch import nn


class GatedExperts(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.router = nn.Linear(dim, 1)
        self.expert_a = nn.Linear(dim, dim)
        self.gate_a = nn.Linear(dim, dim)
        self.expert_b = nn.Linear(dim, dim)
        self.gate_b = nn.Linear(dim, dim)

    def forward(self, x):
        score = self.router(x).mean()
        # expect: GM101
        def _gm_cond_true_17(x):
            h = self.expert_a(x)
            g = torch.sigmoid(self.gate_a(x))
            return h, g

        def _gm_cond_false_17(x):
            h = self.expert_b(x)
            g = torch.sigmoid(self.gate_b(x))
            return h, g

        h, g = torch.cond(score > 0, _gm_cond_true_17, _gm_cond_false_17, (x,))
        return h * g + x


def make():
    """Return (eager_callable, input_sets) where input_sets together take EVERY branch."""
    model = GatedExperts()
    with torch.no_grad():
        model.router.weight.fill_(1.0)
        model.router.bias.zero_()
    return model, [(torch.ones(4, 8),), (-torch.ones(4, 8),)]


compiled = torch.compile(GatedExperts())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
