"""FSMT `_prepare_fsmt_decoder_inputs`: `make_padding_mask` returns None when `not padding_mask.any()`, after
`shift_tokens_right` writes the eos token with a gather.

Source: huggingface/transformers@v5.23.0:src/transformers/models/fsmt/modeling_fsmt.py:173-263, 791-793
Census: penguinwu/oss-model-graph-break-corpus: FSMTModel is a graph-break model in eval and train (the DynamicCache
config deepcopy and LayerDrop sites are listed; this helper runs in every forward that builds decoder inputs).
Kept: invert_mask (with its shape assert), shift_tokens_right, make_padding_mask, fill_with_neg_inf and
_prepare_fsmt_decoder_inputs verbatim; the model forward calls it like FSMTModel.forward.
Simplified: the decoder is an Embedding masked by the padding mask.
"""
import torch
from torch import nn


def invert_mask(attention_mask):
    """Turns 1->0, 0->1, False->True, True-> False"""
    assert attention_mask.dim() == 2
    return attention_mask.eq(0)


def shift_tokens_right(input_ids, pad_token_id):
    """Shift input ids one token to the right, and wrap the last non pad token (usually <eos>)."""

    # replace possible -100 values in labels by `pad_token_id`
    input_ids.masked_fill_(input_ids == -100, pad_token_id)

    prev_output_tokens = input_ids.clone()
    index_of_eos = (input_ids.ne(pad_token_id).sum(dim=1) - 1).unsqueeze(-1)
    prev_output_tokens[:, 0] = input_ids.gather(1, index_of_eos).squeeze()
    prev_output_tokens[:, 1:] = input_ids[:, :-1]
    return prev_output_tokens


def make_padding_mask(input_ids, padding_idx=1):
    """True for pad tokens"""
    padding_mask = input_ids.eq(padding_idx)
    if not padding_mask.any():
        padding_mask = None
    return padding_mask


def fill_with_neg_inf(t):
    """FP16-compatible function that fills an input_ids with -inf."""
    return t.float().fill_(torch.finfo(t.dtype).min).type_as(t)


def _prepare_fsmt_decoder_inputs(config, input_ids, decoder_input_ids=None, decoder_padding_mask=None,
                                 causal_mask_dtype=torch.float32):
    pad_token_id = config.pad_token_id
    if decoder_input_ids is None:
        decoder_input_ids = shift_tokens_right(input_ids, pad_token_id)
    bsz, tgt_len = decoder_input_ids.size()
    if decoder_padding_mask is None:
        decoder_padding_mask = make_padding_mask(decoder_input_ids, pad_token_id)
    else:
        decoder_padding_mask = invert_mask(decoder_padding_mask)
    causal_mask = torch.triu(
        fill_with_neg_inf(torch.zeros(tgt_len, tgt_len, dtype=causal_mask_dtype, device=decoder_input_ids.device)),
        diagonal=1,
    )
    return decoder_input_ids, decoder_padding_mask, causal_mask


class FSMTConfig:
    pad_token_id = 1
    tgt_vocab_size = 12
    d_model = 4


class FSMTModel(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.decoder = nn.Embedding(config.tgt_vocab_size, config.d_model)

    def forward(self, input_ids, decoder_input_ids=None, decoder_attention_mask=None):
        decoder_input_ids, decoder_padding_mask, causal_mask = _prepare_fsmt_decoder_inputs(
            self.config,
            input_ids,
            decoder_input_ids=decoder_input_ids,
            decoder_padding_mask=decoder_attention_mask,
            causal_mask_dtype=self.decoder.weight.dtype,
        )
        x = self.decoder(decoder_input_ids)
        if decoder_padding_mask is not None:
            x = x.masked_fill(decoder_padding_mask[..., None], 0.0)
        return x + causal_mask.clamp(min=-1.0).mean()


model = torch.compile(FSMTModel(FSMTConfig()))


def make():
    torch.manual_seed(0)
    return FSMTModel(FSMTConfig()), [
        (torch.tensor([[4, 5, 6, 2], [7, 8, 2, 1]]),),
        (torch.tensor([[4, 5, 6, 2]]),),
        (torch.tensor([[4, 5, 6, 2]]), torch.tensor([[2, 4, 5, 6]]), torch.tensor([[1, 1, 1, 0]])),
    ]
