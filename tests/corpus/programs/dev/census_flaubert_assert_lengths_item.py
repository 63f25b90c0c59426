"""Flaubert: `assert lengths.max().item() <= slen` checks the lengths derived from padding tokens.

Source: huggingface/transformers@v5.23.0:src/transformers/models/flaubert/modeling_flaubert.py:805-840
Census: penguinwu/oss-model-graph-break-corpus explain_results (pt2.10): FlaubertModel eval+train,
`modeling_flaubert.py:835 assert lengths.max().item() <= slen`.
Kept: the lengths computation from `pad_index`, both asserts, `get_masks`, embeddings and the mask multiply.
Simplified: one Linear stands in for the attention/FFN layers.
"""
import torch
from torch import nn


class FlaubertConfig:
    n_words = 20
    emb_dim = 8
    pad_index = 2
    causal = False


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
    return mask, attn_mask


class FlaubertModel(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.pad_index = config.pad_index
        self.causal = config.causal
        self.embeddings = nn.Embedding(config.n_words, config.emb_dim, padding_idx=self.pad_index)
        self.layer = nn.Linear(config.emb_dim, config.emb_dim)

    def forward(self, input_ids=None, lengths=None):
        bs, slen = input_ids.size()
        device = input_ids.device
        if lengths is None:
            if input_ids is not None:
                lengths = (input_ids != self.pad_index).sum(dim=1).long()
            else:
                lengths = torch.full((bs,), slen, device=device, dtype=torch.long)

        # check inputs
        assert lengths.size(0) == bs
        assert lengths.max().item() <= slen

        mask, attn_mask = get_masks(slen, lengths, self.causal)
        tensor = self.embeddings(input_ids)
        tensor *= mask.unsqueeze(-1).to(tensor.dtype)
        tensor = self.layer(tensor)
        tensor *= mask.unsqueeze(-1).to(tensor.dtype)
        return tensor


flaubert = torch.compile(FlaubertModel(FlaubertConfig()), backend="inductor")


def make():
    torch.manual_seed(0)
    ids = torch.tensor([[5, 6, 7, 2], [8, 9, 2, 2]])
    return FlaubertModel(FlaubertConfig()), [(ids,), (ids, torch.tensor([4, 2]))]
