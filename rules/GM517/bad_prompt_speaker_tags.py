"""GM517 bad: a byte-level text encoder that swaps speaker tags for control bytes with
`bytes.replace` inside the compiled region (the shape of Dia's `_prepare_text_input`).

Dynamo has no handler for `bytes.replace`: each call breaks the graph ("Unsupported method
call", GB0156).
"""
import torch
from torch import nn


class ByteEncoder(nn.Module):
    def __init__(self, dim: int = 4, max_len: int = 16) -> None:
        super().__init__()
        self.embed = nn.Embedding(256, dim)
        self.max_len = max_len

    def forward(self, text: str) -> torch.Tensor:
        byte_text = text.encode("utf-8")
        byte_text = byte_text.replace(b"[S1]", b"\x01")
        byte_text = byte_text.replace(b"[S2]", b"\x02")
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
