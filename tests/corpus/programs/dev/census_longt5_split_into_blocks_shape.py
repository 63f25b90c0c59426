"""LongT5 local attention blocking: `_split_into_blocks` pads when `x.shape[dim] % block_len != 0`, with
`if not all(x.shape)` and `if 0 in output_shape` guards (shape-only checks; no break).

Source: huggingface/transformers@v5.23.0:src/transformers/models/longt5/modeling_longt5.py:89-140
Census: penguinwu/oss-model-graph-break-corpus explain_results (pt2.10) logged `modeling_longt5.py:74 if
x.shape[dim] % block_len != 0:` for LongT5Model as a resume-after-break site; the check itself reads shapes only.
Kept: `_pad_to_multiple`, `_split_into_blocks`, `_concatenate_3_blocks` verbatim and a local-attention caller.
Simplified: the attention is a mean over the three concatenated blocks.
"""
import torch
from torch import nn


def _pad_to_multiple(x, block_len, dim, pad_value=0):
    """Pad a tensor so that a sequence length will be a multiple of `block_len`"""
    pad_len = -x.shape[dim] % block_len
    # Handle cases when an empty input sequence is given
    if not all(x.shape):
        new_shape = list(x.shape)
        new_shape[dim] += pad_len
        return torch.zeros(new_shape, dtype=x.dtype)

    pad = [(0, 0)] * x.ndim
    pad[dim] = (0, pad_len)
    pad = sum(pad[::-1], ())
    x = nn.functional.pad(x, pad=pad, mode="constant", value=pad_value)
    return x


def _split_into_blocks(x, block_len, dim):
    """Split an input tensor into blocks of a given `block_len` along the given `dim`."""
    # pad tensor to multiple of block_len
    if x.shape[dim] % block_len != 0:
        x = _pad_to_multiple(x, block_len, dim, pad_value=0)
    num_blocks = x.shape[dim] // block_len
    output_shape = x.shape[:dim] + (num_blocks, block_len) + x.shape[(dim + 1) :]
    # If 0 is in output_shape, we cannot apply reshape because of incompatibility with ONNX conversion
    if 0 in output_shape:
        return torch.empty(output_shape, dtype=x.dtype, device=x.device)
    return x.reshape(output_shape)


def _concatenate_3_blocks(x, block_dim, sequence_dim, pad_value=0):
    num_blocks = x.shape[block_dim]
    pad = [(0, 0)] * x.ndim
    pad[block_dim] = (1, 1)
    pad = sum(pad[::-1], ())
    # [batch_size, num_blocks, block_len] -> [batch_size, num_blocks + 2, block_len]
    x = nn.functional.pad(x, pad=pad, mode="constant", value=pad_value)
    blocks_list = []
    for i in range(3):
        # We use indexing approach here:
        indices = [slice(0, None)] * x.ndim
        indices[block_dim] = slice(i, i + num_blocks)
        indices = tuple(indices)
        blocks_list.append(x[indices])
    # [batch_size, num_blocks, 3 * block_len, ...]
    return torch.cat(blocks_list, dim=sequence_dim)


class LongT5LocalAttention(nn.Module):
    def __init__(self, d_model=4, block_len=3):
        super().__init__()
        self.block_len = block_len
        self.k = nn.Linear(d_model, d_model)

    def forward(self, hidden_states):
        key_states = _split_into_blocks(self.k(hidden_states), self.block_len, dim=1)
        key_states = _concatenate_3_blocks(key_states, block_dim=1, sequence_dim=2)
        return key_states.mean(dim=2)


attention = torch.compile(LongT5LocalAttention())


def make():
    torch.manual_seed(0)
    return LongT5LocalAttention(), [(torch.randn(1, 6, 4),), (torch.randn(1, 7, 4),)]
