"""GM101 bad: a tensor-valued `if` whose branches call submodules and a helper (call-bearing bodies)."""
import torch
from torch import nn


def normalize(h):
    return h / (h.norm(dim=-1, keepdim=True) + 1e-6)


class RoutedBlock(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.router = nn.Linear(dim, 1)
        self.expert_a = nn.Linear(dim, dim)
        self.expert_b = nn.Linear(dim, dim)

    def forward(self, x):
        gate = torch.sigmoid(self.router(x)).mean()
        # expect: GM101
        def _gm_cond_true_19(x):
            return normalize(self.expert_a(x))

        def _gm_cond_false_19(x):
            return torch.relu(self.expert_b(x))

        h = torch.cond(gate > 0.5, _gm_cond_true_19, _gm_cond_false_19, (x,))
        return x + h


def make():
    """Return (eager_callable, input_sets) where input_sets together take EVERY branch."""
    torch.manual_seed(0)
    model = RoutedBlock()
    with torch.no_grad():
        model.router.weight.fill_(1.0)
        model.router.bias.zero_()
    return model, [(torch.ones(4, 8),), (-torch.ones(4, 8),)]


compiled = torch.compile(RoutedBlock())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
