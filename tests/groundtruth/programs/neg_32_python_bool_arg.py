"""Negative: `if causal:` on a Python bool argument (specialised) -- no break."""
import torch


def attention_scores(q, k, causal):
    s = q @ k.transpose(-2, -1)
    if causal:
        s = s.masked_fill(torch.ones(4, 4, dtype=torch.bool).triu(1), float("-inf"))
    return s.softmax(-1)


def make():
    """Return (eager_callable, input_sets) where input_sets together take EVERY branch."""
    torch.manual_seed(0)
    q, k = torch.randn(4, 8), torch.randn(4, 8)
    return attention_scores, [(q, k, True), (q, k, False)]


compiled = torch.compile(attention_scores)

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
