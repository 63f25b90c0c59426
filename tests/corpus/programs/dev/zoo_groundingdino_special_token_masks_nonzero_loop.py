"""GroundingDINO text branch: generate_masks_with_special_tokens_and_transfer_map finds special tokens with torch.nonzero and walks them in a Python loop (`row, col = idxs[i]`, `if (col == 0) or (col == num_token - 1)`, slices bounded by tensor cols), then the forward truncates to max_text_len and feeds BERT with the sub-sentence masks.

Source: IDEA-Research/GroundingDINO@856dde20aee659246248e20734ef9ba5214f5e44:groundingdino/models/GroundingDINO/bertwarper.py:224-273
Also: groundingdino/models/GroundingDINO/groundingdino.py:242-297 (the text part of
GroundingDINO.forward: captions from kw or targets, the mask call, both
max_text_len truncations, sub_sentence_present, feat_map, text_dict).
Kept: the mask function verbatim; the forward's text part verbatim from the
mask call to text_dict.
Simplified: the HF tokenizer runs outside (its BatchEncoding is a small dict
with attribute access, passed in); BertModelWarper is an embedding + masked
mean stand-in; max_text_len 8, d_model 8, BERT-like ids below 6000.
"""
import torch
from torch import nn


class BatchEncoding(dict):
    """Minimal stand-in for transformers.BatchEncoding: dict with attribute access."""
    def __getattr__(self, item):
        try:
            return self[item]
        except KeyError:
            raise AttributeError(item)

    def to(self, device):
        return BatchEncoding({k: v.to(device) for k, v in self.items()})


def generate_masks_with_special_tokens_and_transfer_map(tokenized, special_tokens_list, tokenizer):
    """Generate attention mask between each pair of special tokens
    Args:
        input_ids (torch.Tensor): input ids. Shape: [bs, num_token]
        special_tokens_mask (list): special tokens mask.
    Returns:
        torch.Tensor: attention mask between each special tokens.
    """
    input_ids = tokenized["input_ids"]
    bs, num_token = input_ids.shape
    # special_tokens_mask: bs, num_token. 1 for special tokens. 0 for normal tokens
    special_tokens_mask = torch.zeros((bs, num_token), device=input_ids.device).bool()
    for special_token in special_tokens_list:
        special_tokens_mask |= input_ids == special_token

    # idxs: each row is a list of indices of special tokens
    idxs = torch.nonzero(special_tokens_mask)

    # generate attention mask and positional ids
    attention_mask = (
        torch.eye(num_token, device=input_ids.device).bool().unsqueeze(0).repeat(bs, 1, 1)
    )
    position_ids = torch.zeros((bs, num_token), device=input_ids.device)
    cate_to_token_mask_list = [[] for _ in range(bs)]
    previous_col = 0
    for i in range(idxs.shape[0]):
        row, col = idxs[i]
        if (col == 0) or (col == num_token - 1):
            attention_mask[row, col, col] = True
            position_ids[row, col] = 0
        else:
            attention_mask[row, previous_col + 1 : col + 1, previous_col + 1 : col + 1] = True
            position_ids[row, previous_col + 1 : col + 1] = torch.arange(
                0, col - previous_col, device=input_ids.device
            )
            c2t_maski = torch.zeros((num_token), device=input_ids.device).bool()
            c2t_maski[previous_col + 1 : col] = True
            cate_to_token_mask_list[row].append(c2t_maski)
        previous_col = col

    cate_to_token_mask_list = [
        torch.stack(cate_to_token_mask_listi, dim=0)
        for cate_to_token_mask_listi in cate_to_token_mask_list
    ]

    # # padding mask
    # padding_mask = tokenized['attention_mask']
    # attention_mask = attention_mask & padding_mask.unsqueeze(1).bool() & padding_mask.unsqueeze(2).bool()

    return attention_mask, position_ids.to(torch.long), cate_to_token_mask_list


class BertStandIn(nn.Module):
    def __init__(self, vocab=6000, hidden=8, max_pos=64):
        super().__init__()
        self.word = nn.Embedding(vocab, hidden)
        self.pos = nn.Embedding(max_pos, hidden)
        self.proj = nn.Linear(hidden, hidden)

    def forward(self, input_ids, attention_mask=None, token_type_ids=None, position_ids=None):
        if position_ids is None:
            position_ids = torch.arange(input_ids.shape[1], device=input_ids.device)[None]
        h = self.word(input_ids) + self.pos(position_ids)
        if attention_mask is not None and attention_mask.dim() == 3:
            m = attention_mask.float()
            h = torch.bmm(m, h) / m.sum(-1, keepdim=True).clamp(min=1)
        return {"last_hidden_state": self.proj(h)}


class GroundingDINOText(nn.Module):
    def __init__(self, hidden_dim=8, max_text_len=256, sub_sentence_present=True):
        super().__init__()
        self.max_text_len = max_text_len
        self.sub_sentence_present = sub_sentence_present
        self.tokenizer = None
        self.specical_tokens = [101, 102, 1012, 1029]  # convert_tokens_to_ids(["[CLS]", "[SEP]", ".", "?"])
        self.bert = BertStandIn(hidden=hidden_dim)
        self.feat_map = nn.Linear(hidden_dim, hidden_dim, bias=True)

    def forward(self, samples, tokenized, targets=None, **kw):
        if targets is None:
            captions = kw["captions"]
        else:
            captions = [t["caption"] for t in targets]

        # encoder texts (tokenized outside: the HF tokenizer is not part of this program)
        tokenized = tokenized.to(samples.device)
        (
            text_self_attention_masks,
            position_ids,
            cate_to_token_mask_list,
        ) = generate_masks_with_special_tokens_and_transfer_map(
            tokenized, self.specical_tokens, self.tokenizer
        )

        if text_self_attention_masks.shape[1] > self.max_text_len:
            text_self_attention_masks = text_self_attention_masks[
                :, : self.max_text_len, : self.max_text_len
            ]
            position_ids = position_ids[:, : self.max_text_len]
            tokenized["input_ids"] = tokenized["input_ids"][:, : self.max_text_len]
            tokenized["attention_mask"] = tokenized["attention_mask"][:, : self.max_text_len]
            tokenized["token_type_ids"] = tokenized["token_type_ids"][:, : self.max_text_len]

        # extract text embeddings
        if self.sub_sentence_present:
            tokenized_for_encoder = {k: v for k, v in tokenized.items() if k != "attention_mask"}
            tokenized_for_encoder["attention_mask"] = text_self_attention_masks
            tokenized_for_encoder["position_ids"] = position_ids
        else:
            # import ipdb; ipdb.set_trace()
            tokenized_for_encoder = tokenized

        bert_output = self.bert(**tokenized_for_encoder)  # bs, 195, 768

        encoded_text = self.feat_map(bert_output["last_hidden_state"])  # bs, 195, d_model
        text_token_mask = tokenized.attention_mask.bool()  # bs, 195
        # text_token_mask: True for nomask, False for mask
        # text_self_attention_masks: True for nomask, False for mask

        if encoded_text.shape[1] > self.max_text_len:
            encoded_text = encoded_text[:, : self.max_text_len, :]
            text_token_mask = text_token_mask[:, : self.max_text_len]
            position_ids = position_ids[:, : self.max_text_len]
            text_self_attention_masks = text_self_attention_masks[
                :, : self.max_text_len, : self.max_text_len
            ]

        text_dict = {
            "encoded_text": encoded_text,  # bs, 195, d_model
            "text_token_mask": text_token_mask,  # bs, 195
            "position_ids": position_ids,  # bs, 195
            "text_self_attention_masks": text_self_attention_masks,  # bs, 195,195
        }
        return text_dict, cate_to_token_mask_list


def load_model():
    model = GroundingDINOText(hidden_dim=8, max_text_len=8).eval()
    return torch.compile(model)


def make():
    torch.manual_seed(0)
    model = GroundingDINOText(hidden_dim=8, max_text_len=8).eval()
    samples = torch.randn(1, 3, 8, 8)
    # "[CLS] cat . dog . [SEP]" and "[CLS] a red car . [SEP] [PAD]" ...
    ids = torch.tensor([[101, 4937, 1012, 3899, 1012, 102, 0, 0],
                        [101, 1037, 2417, 2482, 1012, 102, 0, 0]])
    att = (ids != 0).long()
    short = BatchEncoding(input_ids=ids, attention_mask=att, token_type_ids=torch.zeros_like(ids))
    long_ids = torch.tensor([[101, 4937, 1012, 3899, 1012, 4743, 1012, 5984, 1012, 102]])
    long = BatchEncoding(input_ids=long_ids, attention_mask=torch.ones_like(long_ids),
                         token_type_ids=torch.zeros_like(long_ids))
    return model, [
        (samples, short, [{"caption": "cat . dog ."}, {"caption": "a red car ."}]),
        (samples, long, [{"caption": "cat . dog . bird . fish ."}]),
    ]
