"""GM101 positive: MoE routing skips an expert when no token is routed to it (`if (top1 == e).any()`, twice)."""
import torch
from torch import nn


class TinyMoE(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.router = nn.Linear(dim, 2, bias=False)
        self.expert0 = nn.Linear(dim, dim)
        self.expert1 = nn.Linear(dim, dim)

    def forward(self, x):
        top1 = self.router(x).argmax(dim=-1)
        out = torch.zeros_like(x)
        sel0 = (top1 == 0).unsqueeze(-1).to(x.dtype)
        sel1 = (top1 == 1).unsqueeze(-1).to(x.dtype)
        if (top1 == 0).any():  # expect: GM101
            out = out + self.expert0(x) * sel0
        if (top1 == 1).any():  # expect: GM101
            out = out + self.expert1(x) * sel1
        return out


def make():
    """Return (eager_callable, input_sets) where input_sets together take EVERY branch."""
    torch.manual_seed(0)
    model = TinyMoE()
    with torch.no_grad():
        model.router.weight.copy_(torch.tensor([[1.0] * 8, [-1.0] * 8]))
    pos = torch.ones(4, 8)   # every token -> expert 0
    neg = -torch.ones(4, 8)  # every token -> expert 1
    return model, [(pos,), (neg,)]


compiled = torch.compile(TinyMoE())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
