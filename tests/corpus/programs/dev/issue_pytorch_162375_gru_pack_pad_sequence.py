"""Embedding -> pack_padded_sequence(lengths.cpu()) -> GRU -> pad_packed_sequence, compiled fullgraph.

Source: pytorch/pytorch#162375 (https://github.com/pytorch/pytorch/issues/162375)
Kept: the reporter's module M verbatim (lengths moved to CPU, enforce_sorted=False, time-major GRU),
get_inputs(), and `torch.compile(m, fullgraph=True)`.
Simplified: vocab 10000 -> 50, E/H 256/512 -> 8/6; a second input set with unequal lengths.
"""
import torch
import torch.nn as nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence


class M(nn.Module):
    def __init__(self, vocab_size=50, E=8, H=6):
        super().__init__()
        self.emb = nn.Embedding(vocab_size, E)
        self.rnn = nn.GRU(E, H, batch_first=False)

    def forward(self, ids, lengths):
        x = self.emb(ids)                                   # [T,B,E]
        packed = pack_padded_sequence(x, lengths.cpu(), enforce_sorted=False)
        packed_out, _ = self.rnn(packed)
        padded_out, _ = pad_packed_sequence(packed_out)
        return padded_out


def get_inputs(T=10, B=1):
    ids = torch.randint(0, 50, (T, B), dtype=torch.long)
    lengths = torch.tensor([T] * B, dtype=torch.int64)
    return ids, lengths


def main():
    m = M().cpu()
    ids, lens = get_inputs()
    _ = m(ids, lens)
    cm = torch.compile(m, fullgraph=True)
    return cm(ids, lens)


def make():
    torch.manual_seed(0)
    ids, lens = get_inputs()
    ids2 = torch.randint(0, 50, (7, 3), dtype=torch.long)
    lens2 = torch.tensor([7, 4, 2], dtype=torch.int64)
    return M(), [(ids, lens), (ids2, lens2)]
