"""GM517 negative: the same tag swap done on the `str` before encoding; `str.replace`, `encode`
and `list(bytes)` all trace."""
import torch
from torch import nn


class ByteEncoder(nn.Module):
    def __init__(self, dim: int = 4, max_len: int = 16) -> None:
        super().__init__()
        self.embed = nn.Embedding(256, dim)
        self.max_len = max_len

    def forward(self, text: str) -> torch.Tensor:
        byte_text = text.replace("[S1]", "\x01").replace("[S2]", "\x02").encode("utf-8")
        tokens = torch.zeros(self.max_len, dtype=torch.long)
        ids = list(byte_text)[: self.max_len]
        tokens[: len(ids)] = torch.tensor(ids, dtype=torch.long)
        return self.embed(tokens)


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    return ByteEncoder(), [("[S1] Hi. [S2] Hey.",)]


encoder = torch.compile(ByteEncoder())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
