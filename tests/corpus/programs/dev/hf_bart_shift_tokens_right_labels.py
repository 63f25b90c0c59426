"""BART shift_tokens_right when only labels are given: new_zeros, slice copy, pad_token_id None ValueError, masked_fill_ of -100 (no break).

Source: huggingface/transformers@v5.23.0:src/transformers/models/bart/modeling_bart.py:58-71,1600-1640
Kept: shift_tokens_right verbatim and BartForConditionalGeneration.forward's
`if labels is not None: if decoder_input_ids is None and decoder_inputs_embeds
is None: decoder_input_ids = shift_tokens_right(...)` plus the masked LM loss.
Simplified: encoder-decoder is an embedding + linear head; vocab 10.
"""
import torch
from torch import nn
from torch.nn import CrossEntropyLoss


def shift_tokens_right(input_ids: torch.Tensor, pad_token_id: int, decoder_start_token_id: int):
    shifted_input_ids = input_ids.new_zeros(input_ids.shape)
    shifted_input_ids[:, 1:] = input_ids[:, :-1].clone()
    shifted_input_ids[:, 0] = decoder_start_token_id
    if pad_token_id is None:
        raise ValueError("self.model.config.pad_token_id has to be defined.")
    shifted_input_ids.masked_fill_(shifted_input_ids == -100, pad_token_id)
    return shifted_input_ids


class BartConfig:
    pad_token_id = 1
    decoder_start_token_id = 2
    vocab_size = 10


class BartForConditionalGeneration(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.embed = nn.Embedding(config.vocab_size, 8)
        self.lm_head = nn.Linear(8, config.vocab_size, bias=False)

    def forward(self, input_ids, decoder_input_ids=None, labels=None):
        if labels is not None:
            if decoder_input_ids is None:
                decoder_input_ids = shift_tokens_right(labels, self.config.pad_token_id, self.config.decoder_start_token_id)
        hidden = self.embed(decoder_input_ids) + self.embed(input_ids).mean(1, keepdim=True)
        lm_logits = self.lm_head(hidden)
        masked_lm_loss = None
        if labels is not None:
            loss_fct = CrossEntropyLoss()
            masked_lm_loss = loss_fct(lm_logits.view(-1, self.config.vocab_size), labels.view(-1))
        return (masked_lm_loss, lm_logits) if masked_lm_loss is not None else (lm_logits,)


model = torch.compile(BartForConditionalGeneration(BartConfig()).train())


def make():
    torch.manual_seed(0)
    ids = torch.tensor([[0, 5, 6, 2]])
    labels = torch.tensor([[5, 6, 2, -100]])
    return BartForConditionalGeneration(BartConfig()).train(), [(ids, None, labels), (ids, torch.tensor([[2, 5, 6, 7]]))]
