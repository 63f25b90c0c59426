"""GM301: printf-style `%` formatting of a tensor converts it to a Python number or string.

`"%d" % t` needs the tensor's value as a Python int (GB0033, "Data dependent operator"),
`"%s" % t` its text (GB0208), and a tuple of operands holding a tensor breaks as well (GB0088);
`capture_scalar_outputs` does not help. Dynamo cannot resume inside an expression, so each
break runs the rest of its function eagerly. Formatting shapes and Python numbers, and an
f-string of the tensor, do not break and are not flagged.
"""
import torch
from torch import nn


def count_text(tokens: torch.Tensor) -> str:
    return "tokens=%d" % tokens


def peak_text(x: torch.Tensor) -> str:
    return "peak=%s" % x.abs().max()


def ratio_text(tokens: torch.Tensor, total: int) -> str:
    return "%d/%d" % (tokens, total)


class TokenSummary(nn.Module):
    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, str]:
        tokens = mask.sum()
        shape = "batch=%d width=%d" % (x.shape[0], x.shape[1])
        y = x * 2
        text = f"{shape} {count_text(tokens)} {peak_text(y)} {ratio_text(tokens, mask.numel())} {y.mean()}"
        return y + 1, text


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    return TokenSummary(), [(torch.randn(2, 4), torch.tensor([1, 1, 0]))]


compiled = torch.compile(TokenSummary())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
