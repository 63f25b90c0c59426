"""Grounding DINO training loss setup: `build_label_maps` runs `torch.unique(label_group)[1:, None]` per
prompt (output size depends on the data) when labels are given.

Source: huggingface/transformers@v5.23.0:src/transformers/models/grounding_dino/modeling_grounding_dino.py:1807,
2310-2376, 2550-2565
Census: penguinwu/oss-model-graph-break-corpus explain_results (pt2.10): GroundingDinoModel / MMGroundingDinoModel
have 12 breaks per mode; the detection head adds this label-map construction when `labels` are passed.
Kept: SPECIAL_TOKENS, build_label_maps (isin delimiters, cumsum label groups, per-sample unique, one-hot via
where, pad to max_seq_len), build_text_mask, and the `if labels is not None:` call site.
Simplified: logits come from a Linear; the Hungarian-matching loss is a masked mean.
"""
import torch
import torch.nn.functional as F
from torch import nn

SPECIAL_TOKENS = [101, 102, 1012, 1029]


def build_label_maps(logits, input_ids):
    max_seq_len = logits.shape[-1]
    # Add [PAD] token to the list of special tokens
    delimiter_tokens = torch.tensor(SPECIAL_TOKENS + [0], device=input_ids.device)

    delimiter_token_masks = torch.isin(input_ids, delimiter_tokens)
    label_groups = torch.cumsum(delimiter_token_masks, dim=1) * (~delimiter_token_masks).to(torch.int32)

    label_maps = ()

    # Iterate over batch dimension as we can have different number of labels
    for label_group in label_groups:
        # `label_group` is a tensor of shape `(seq_len,)` with zeros for non-label tokens and integers for label tokens
        # label tokens with same integer value are part of the same label group

        # Get unique labels and exclude 0 (i.e. non-label tokens)
        unique_labels = torch.unique(label_group)[1:, None]
        num_labels = unique_labels.shape[0]

        # Create one-hot encoding for each label group
        label_map = label_group.unsqueeze(0).repeat(num_labels, 1)
        label_map = torch.where(label_map == unique_labels, 1, 0)

        # Pad label_map to match `max_seq_len`
        label_map = F.pad(label_map, (0, max_seq_len - label_map.shape[1]), value=0)

        label_maps += (label_map,)

    return label_maps


def build_text_mask(logits, attention_mask):
    """
    Create text_mask based on the matching indices
    """
    seq_len = attention_mask.shape[1]
    text_mask = torch.zeros_like(logits, device=logits.device, dtype=attention_mask.dtype)
    text_mask[:, :, :seq_len] = attention_mask[:, None, :]

    return text_mask.bool()


class GroundingDinoForObjectDetection(nn.Module):
    def __init__(self, num_queries=3, max_text_len=8, hidden=4):
        super().__init__()
        self.query_embed = nn.Parameter(torch.randn(num_queries, hidden))
        self.text_proj = nn.Embedding(1200, hidden)
        self.max_text_len = max_text_len

    def forward(self, input_ids, attention_mask, labels=None):
        text = self.text_proj(input_ids)
        logits = torch.einsum("qd,bsd->bqs", self.query_embed, text)
        logits = F.pad(logits, (0, self.max_text_len - logits.shape[-1]), value=float("-inf"))
        loss = None
        if labels is not None:
            label_maps = build_label_maps(logits, input_ids)
            text_mask = build_text_mask(logits, attention_mask)
            targets = torch.stack([m.sum(0) for m in label_maps]).float()
            loss = (logits.masked_fill(~text_mask, 0.0).sum(1) * targets[:, : logits.shape[-1]]).mean()
        return loss, logits


def train(model, batches):
    model.train()
    compiled = torch.compile(model)
    for ids, mask, labels in batches:
        loss, _ = compiled(ids, mask, labels)
        loss.backward()


def make():
    torch.manual_seed(0)
    ids = torch.tensor([[101, 3869, 1012, 1142, 1143, 1012, 102], [101, 3869, 1012, 102, 0, 0, 0]])
    mask = (ids != 0).long()
    return GroundingDinoForObjectDetection().train(), [(ids, mask), (ids, mask, torch.ones(2))]
