"""FSMT make_padding_mask: `if not padding_mask.any(): padding_mask = None`, then the encoder masks with it when present.

Source: huggingface/transformers@v5.23.0:src/transformers/models/fsmt/modeling_fsmt.py:173-176,187-211,263-268
Kept: make_padding_mask verbatim, invert_mask, and
_prepare_fsmt_decoder_inputs-style use: the encoder receives the optional
mask and masks the padded embeddings.
Simplified: encoder is an embedding + linear; pad index 1.
"""
import torch
from torch import nn


def invert_mask(attention_mask):
    """Turns 1->0, 0->1, False->True, True-> False"""
    assert attention_mask.dim() == 2
    return attention_mask.eq(0)


def make_padding_mask(input_ids, padding_idx=1):
    """True for pad tokens"""
    padding_mask = input_ids.eq(padding_idx)
    if not padding_mask.any():
        padding_mask = None
    return padding_mask


class FSMTEncoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed_tokens = nn.Embedding(10, 8, padding_idx=1)
        self.fc = nn.Linear(8, 8)

    def forward(self, input_ids, attention_mask=None):
        if attention_mask is not None:
            attention_mask = invert_mask(attention_mask)
        else:
            attention_mask = make_padding_mask(input_ids, padding_idx=1)
        x = self.embed_tokens(input_ids)
        if attention_mask is not None:
            x = x.masked_fill(attention_mask[..., None], 0.0)
        return self.fc(x)


encoder = torch.compile(FSMTEncoder())


def make():
    torch.manual_seed(0)
    return FSMTEncoder(), [(torch.tensor([[4, 5, 6, 1]]),), (torch.tensor([[4, 5, 6, 7]]),), (torch.tensor([[4, 5, 1, 1]]), torch.tensor([[1, 1, 0, 0]]))]
