"""GM503 bad: MRA's attention without its CUDA kernel returns `torch.zeros_like(query).requires_grad_()`, a new leaf that leaves the graph."""
import torch
from torch import nn

kernel = None


def approximate_attention(query, key, value):
    if kernel is None:
        return torch.zeros_like(query).requires_grad_(not torch.compiler.is_compiling())  # expect: GM503
    return kernel(query, key, value)


class SelfAttention(nn.Module):
    def __init__(self, dim=4):
        super().__init__()
        self.qkv = nn.Linear(dim, 3 * dim)
        self.out = nn.Linear(dim, dim)

    def forward(self, hidden_states):
        query, key, value = self.qkv(hidden_states).chunk(3, dim=-1)
        context = approximate_attention(query.float(), key.float(), value.float())
        return self.out(context + hidden_states)


def make():
    """Return (eager_callable, input_sets): a model in train mode."""
    torch.manual_seed(0)
    return SelfAttention().train(), [(torch.randn(2, 5, 4),)]


compiled = torch.compile(SelfAttention())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
