"""DPR extractive reader: `Reader.forward` flattens N questions x M passages, runs the encoder and the span/relevance heads, and in training mode calls `compute_loss`: in-place `clamp_` of the gold positions, `answer_mask.type(torch.FloatTensor)`, a `CrossEntropyLoss(reduce=False, ignore_index=...)` built per call, per-answer-span losses from list comprehensions over `torch.unbind`, `.max(dim=1)[0]` over passages and the marginal likelihood `_calc_mml`; eval mode returns the reshaped logits.

Source: facebookresearch/DPR@a31212d:dpr/models/reader.py:31-112, 178-182
Also: dpr/models/hf_models.py (HFBertEncoder.forward), dpr/utils/model_utils.py:130-138 (init_weights),
train_extractive_reader.py (`model(input.input_ids, attn_mask, input.token_type_ids,
input.start_positions, input.end_positions, input.answers_mask)` in training).
Kept: Reader, compute_loss, _calc_mml, init_weights and HFBertEncoder.forward verbatim.
Simplified: the three `.cuda()` calls become `.cpu()` (CPU-only run); transformers' BertModel
is a one-layer stand-in returning a BaseModelOutputWithPoolingAndCrossAttentions stand-in;
hidden 16, 2 questions x 2 passages x 8 tokens, up to 2 gold spans per passage.
"""
import collections
import logging
from typing import List, Tuple

import numpy as np
import torch
import torch.nn as nn
from torch import Tensor as T
from torch.nn import CrossEntropyLoss

logger = logging.getLogger()

ReaderBatch = collections.namedtuple(
    "ReaderBatch", ["input_ids", "start_positions", "end_positions", "answers_mask", "token_type_ids"]
)


# ---- transformers stand-ins (BertModel with a one-layer encoder) ----
class _ModelingOutputs:
    class BaseModelOutputWithPoolingAndCrossAttentions(dict):
        def __init__(self, last_hidden_state, pooler_output=None, hidden_states=None):
            super().__init__(last_hidden_state=last_hidden_state)
            self.last_hidden_state = last_hidden_state
            self.pooler_output = pooler_output
            self.hidden_states = hidden_states


class transformers:
    __version__ = "4.30.2"
    modeling_outputs = _ModelingOutputs


class BertConfig:
    vocab_size = 30
    hidden_size = 16
    max_position_embeddings = 16
    type_vocab_size = 2
    output_hidden_states = False


class BertModel(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.word_embeddings = nn.Embedding(config.vocab_size, config.hidden_size)
        self.position_embeddings = nn.Embedding(config.max_position_embeddings, config.hidden_size)
        self.token_type_embeddings = nn.Embedding(config.type_vocab_size, config.hidden_size)
        self.layer = nn.TransformerEncoderLayer(config.hidden_size, 2, 32, dropout=0.1, batch_first=True)
        self.norm = nn.LayerNorm(config.hidden_size)

    def init_weights(self):
        pass

    def forward(self, input_ids=None, token_type_ids=None, attention_mask=None):
        pos = torch.arange(input_ids.shape[1], device=input_ids.device)[None]
        h = self.word_embeddings(input_ids) + self.position_embeddings(pos) + self.token_type_embeddings(token_type_ids)
        h = self.layer(self.norm(h), src_key_padding_mask=~attention_mask.bool())
        return transformers.modeling_outputs.BaseModelOutputWithPoolingAndCrossAttentions(last_hidden_state=h)


# ---- dpr/models/hf_models.py ----
class HFBertEncoder(BertModel):
    def __init__(self, config, project_dim: int = 0):
        BertModel.__init__(self, config)
        assert config.hidden_size > 0, "Encoder hidden_size can't be zero"
        self.encode_proj = nn.Linear(config.hidden_size, project_dim) if project_dim != 0 else None
        self.init_weights()

    def forward(
        self,
        input_ids: T,
        token_type_ids: T,
        attention_mask: T,
        representation_token_pos=0,
    ) -> Tuple[T, ...]:

        out = super().forward(
            input_ids=input_ids,
            token_type_ids=token_type_ids,
            attention_mask=attention_mask,
        )

        # HF >4.0 version support
        if transformers.__version__.startswith("4") and isinstance(
            out,
            transformers.modeling_outputs.BaseModelOutputWithPoolingAndCrossAttentions,
        ):
            sequence_output = out.last_hidden_state
            pooled_output = None
            hidden_states = out.hidden_states

        elif self.config.output_hidden_states:
            sequence_output, pooled_output, hidden_states = out
        else:
            hidden_states = None
            out = super().forward(
                input_ids=input_ids,
                token_type_ids=token_type_ids,
                attention_mask=attention_mask,
            )
            sequence_output, pooled_output = out

        if isinstance(representation_token_pos, int):
            pooled_output = sequence_output[:, representation_token_pos, :]
        else:  # treat as a tensor
            bsz = sequence_output.size(0)
            assert representation_token_pos.size(0) == bsz, "query bsz={} while representation_token_pos bsz={}".format(
                bsz, representation_token_pos.size(0)
            )
            pooled_output = torch.stack([sequence_output[i, representation_token_pos[i, 1], :] for i in range(bsz)])

        if self.encode_proj:
            pooled_output = self.encode_proj(pooled_output)
        return sequence_output, pooled_output, hidden_states


class Tensorizer(object):
    pass


class BertTensorizer(Tensorizer):
    def __init__(self, pad_token_id=0):
        self.pad_token_id = pad_token_id

    def get_pad_id(self) -> int:
        return self.pad_token_id

    def get_attn_mask(self, tokens_tensor: T) -> T:
        return tokens_tensor != self.get_pad_id()


def make_ids(n, length, pad_from, seed):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(1, 30, (n, length), generator=g)
    ids[-1, pad_from:] = 0
    return ids


# ---- dpr/utils/model_utils.py ----
def init_weights(modules: List):
    for module in modules:
        if isinstance(module, (nn.Linear, nn.Embedding)):
            module.weight.data.normal_(mean=0.0, std=0.02)
        elif isinstance(module, nn.LayerNorm):
            module.bias.data.zero_()
            module.weight.data.fill_(1.0)
        if isinstance(module, nn.Linear) and module.bias is not None:
            module.bias.data.zero_()


# ---- dpr/models/reader.py ----
class Reader(nn.Module):
    def __init__(self, encoder: nn.Module, hidden_size):
        super(Reader, self).__init__()
        self.encoder = encoder
        self.qa_outputs = nn.Linear(hidden_size, 2)
        self.qa_classifier = nn.Linear(hidden_size, 1)
        init_weights([self.qa_outputs, self.qa_classifier])

    def forward(
        self,
        input_ids: T,
        attention_mask: T,
        toke_type_ids: T,
        start_positions=None,
        end_positions=None,
        answer_mask=None,
    ):
        # notations: N - number of questions in a batch, M - number of passages per questions, L - sequence length
        N, M, L = input_ids.size()
        start_logits, end_logits, relevance_logits = self._forward(
            input_ids.view(N * M, L),
            attention_mask.view(N * M, L),
            toke_type_ids.view(N * M, L),
        )
        if self.training:
            return compute_loss(
                start_positions, end_positions, answer_mask, start_logits, end_logits, relevance_logits, N, M
            )

        return start_logits.view(N, M, L), end_logits.view(N, M, L), relevance_logits.view(N, M)

    def _forward(self, input_ids, attention_mask, toke_type_ids: T):
        sequence_output, _pooled_output, _hidden_states = self.encoder(input_ids, toke_type_ids, attention_mask)
        logits = self.qa_outputs(sequence_output)
        start_logits, end_logits = logits.split(1, dim=-1)
        start_logits = start_logits.squeeze(-1)
        end_logits = end_logits.squeeze(-1)
        rank_logits = self.qa_classifier(sequence_output[:, 0, :])
        return start_logits, end_logits, rank_logits


def compute_loss(start_positions, end_positions, answer_mask, start_logits, end_logits, relevance_logits, N, M):
    start_positions = start_positions.view(N * M, -1)
    end_positions = end_positions.view(N * M, -1)
    answer_mask = answer_mask.view(N * M, -1)

    start_logits = start_logits.view(N * M, -1)
    end_logits = end_logits.view(N * M, -1)
    relevance_logits = relevance_logits.view(N * M)

    answer_mask = answer_mask.type(torch.FloatTensor).cpu()

    ignored_index = start_logits.size(1)
    start_positions.clamp_(0, ignored_index)
    end_positions.clamp_(0, ignored_index)
    loss_fct = CrossEntropyLoss(reduce=False, ignore_index=ignored_index)

    # compute switch loss
    relevance_logits = relevance_logits.view(N, M)
    switch_labels = torch.zeros(N, dtype=torch.long).cpu()
    switch_loss = torch.sum(loss_fct(relevance_logits, switch_labels))

    # compute span loss
    start_losses = [
        (loss_fct(start_logits, _start_positions) * _span_mask)
        for (_start_positions, _span_mask) in zip(
            torch.unbind(start_positions, dim=1), torch.unbind(answer_mask, dim=1)
        )
    ]

    end_losses = [
        (loss_fct(end_logits, _end_positions) * _span_mask)
        for (_end_positions, _span_mask) in zip(torch.unbind(end_positions, dim=1), torch.unbind(answer_mask, dim=1))
    ]
    loss_tensor = torch.cat([t.unsqueeze(1) for t in start_losses], dim=1) + torch.cat(
        [t.unsqueeze(1) for t in end_losses], dim=1
    )

    loss_tensor = loss_tensor.view(N, M, -1).max(dim=1)[0]
    span_loss = _calc_mml(loss_tensor)
    return span_loss + switch_loss



def _calc_mml(loss_tensor):
    marginal_likelihood = torch.sum(torch.exp(-loss_tensor - 1e10 * (loss_tensor == 0).float()), 1)
    return -torch.sum(
        torch.log(marginal_likelihood + torch.ones(loss_tensor.size(0)).cpu() * (marginal_likelihood == 0).float())
    )


def build_reader():
    encoder = HFBertEncoder(BertConfig())
    reader = Reader(encoder, encoder.config.hidden_size)
    return torch.compile(reader)


def make():
    torch.manual_seed(0)
    encoder = HFBertEncoder(BertConfig())
    reader = Reader(encoder, encoder.config.hidden_size).train()
    N, M, L = 2, 2, 8
    input_ids = make_ids(N * M, L, 6, 0).view(N, M, L)
    attn_mask = input_ids != 0
    token_type_ids = torch.zeros_like(input_ids)
    token_type_ids[..., 3:] = 1
    start_positions = torch.tensor([[[3, 5], [0, 0]], [[4, 0], [0, 0]]])
    end_positions = torch.tensor([[[4, 6], [0, 0]], [[4, 0], [0, 0]]])
    answers_mask = torch.tensor([[[1, 1], [0, 0]], [[1, 0], [0, 0]]])
    return reader, [
        (input_ids, attn_mask, token_type_ids, start_positions, end_positions, answers_mask),
        (input_ids[:1], attn_mask[:1], token_type_ids[:1], start_positions[:1], end_positions[:1], answers_mask[:1]),
    ]
