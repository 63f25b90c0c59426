"""Flaubert/XLM get_masks at v4.52.4: `assert lengths.max().item() <= slen` before building the masks.

Source: huggingface/transformers@v4.52.4:src/transformers/models/flaubert/modeling_flaubert.py:56-78
Kept: get_masks verbatim (arange, the padding_mask switch, the `.item()` assert,
causal triangular mask, the two shape asserts) and the model's use: lengths
computed from `(input_ids != pad_index).sum(dim=1).long()` when not given,
the mask applied to the embeddings.
Simplified: one embedding + layer norm; pad index 2.
"""
import torch
from torch import nn


def get_masks(slen, lengths, causal, padding_mask=None):
    alen = torch.arange(slen, dtype=torch.long, device=lengths.device)
    if padding_mask is not None:
        mask = padding_mask
    else:
        assert lengths.max().item() <= slen
        mask = alen < lengths[:, None]
    bs = lengths.size(0)
    if causal:
        attn_mask = alen[None, None, :].repeat(bs, slen, 1) <= alen[None, :, None]
    else:
        attn_mask = mask
    assert mask.size() == (bs, slen)
    assert causal is False or attn_mask.size() == (bs, slen, slen)
    return mask, attn_mask


class FlaubertModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.pad_index = 2
        self.causal = False
        self.embeddings = nn.Embedding(10, 8, padding_idx=self.pad_index)
        self.layer_norm_emb = nn.LayerNorm(8)

    def forward(self, input_ids, lengths=None, attention_mask=None):
        bs, slen = input_ids.size()
        if lengths is None:
            if input_ids is not None:
                lengths = (input_ids != self.pad_index).sum(dim=1).long()
            else:
                lengths = torch.tensor([slen] * bs)
        mask, attn_mask = get_masks(slen, lengths, self.causal, padding_mask=attention_mask)
        tensor = self.layer_norm_emb(self.embeddings(input_ids))
        tensor *= mask.unsqueeze(-1).to(tensor.dtype)
        return tensor


model = torch.compile(FlaubertModel())


def make():
    torch.manual_seed(0)
    ids = torch.tensor([[5, 6, 7, 2], [3, 4, 2, 2]])
    return FlaubertModel(), [(ids,), (ids, None, torch.tensor([[1, 1, 1, 0], [1, 1, 0, 0]]))]
