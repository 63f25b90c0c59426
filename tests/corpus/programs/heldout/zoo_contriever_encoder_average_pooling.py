"""Contriever passage encoder at inference: `Contriever.forward` calls the BERT body, zeroes padded positions with `masked_fill(~attention_mask[..., None].bool(), 0.0)`, pools by `self.config.pooling` ("average" divides by `attention_mask.sum(dim=1)[..., None]`, "cls" takes position 0) and optionally L2-normalizes; compiled in eval mode as generate_passage_embeddings.embed_passages calls it (`model(**encoded_batch)` under no_grad).

Source: facebookresearch/contriever@39fb220:src/contriever.py:11-56
Also: generate_passage_embeddings.py (embed_passages: `model(**encoded_batch)` with input_ids,
token_type_ids, attention_mask from the tokenizer, then `.cpu()`).
Kept: Contriever.__init__ and forward verbatim.
Simplified: transformers' BertModel is a one-layer stand-in returning {"last_hidden_state"};
hidden 16; padded batches of 3 and 2 passages; the tokenizer output is built by hand.
"""
import math

import torch
import torch.distributed as dist
import torch.nn as nn


# ---- transformers.BertModel stand-in (embeddings, one self-attention layer, extended mask) ----
class BertConfig:
    vocab_size = 30
    hidden_size = 16
    num_attention_heads = 2
    intermediate_size = 32
    max_position_embeddings = 16
    type_vocab_size = 2
    layer_norm_eps = 1e-12


class BertModel(nn.Module):
    def __init__(self, config, add_pooling_layer=True):
        super().__init__()
        self.config = config
        self.word_embeddings = nn.Embedding(config.vocab_size, config.hidden_size)
        self.position_embeddings = nn.Embedding(config.max_position_embeddings, config.hidden_size)
        self.token_type_embeddings = nn.Embedding(config.type_vocab_size, config.hidden_size)
        self.emb_norm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.qkv = nn.Linear(config.hidden_size, 3 * config.hidden_size)
        self.attn_out = nn.Linear(config.hidden_size, config.hidden_size)
        self.attn_norm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.intermediate = nn.Linear(config.hidden_size, config.intermediate_size)
        self.output = nn.Linear(config.intermediate_size, config.hidden_size)
        self.out_norm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(0.1)

    def forward(self, input_ids=None, attention_mask=None, token_type_ids=None, position_ids=None,
                head_mask=None, inputs_embeds=None, encoder_hidden_states=None,
                encoder_attention_mask=None, output_attentions=None, output_hidden_states=None):
        bsz, seq_length = input_ids.shape
        if attention_mask is None:
            attention_mask = torch.ones(bsz, seq_length, device=input_ids.device)
        if token_type_ids is None:
            token_type_ids = torch.zeros(bsz, seq_length, dtype=torch.long, device=input_ids.device)
        if position_ids is None:
            position_ids = torch.arange(seq_length, device=input_ids.device)[None]
        h = self.word_embeddings(input_ids) + self.position_embeddings(position_ids) \
            + self.token_type_embeddings(token_type_ids)
        h = self.dropout(self.emb_norm(h))
        extended = (1.0 - attention_mask[:, None, None, :].to(h.dtype)) * torch.finfo(h.dtype).min
        nh = self.config.num_attention_heads
        q, k, v = self.qkv(h).view(bsz, seq_length, 3, nh, -1).permute(2, 0, 3, 1, 4)
        scores = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1]) + extended
        ctx = (self.dropout(scores.softmax(-1)) @ v).transpose(1, 2).reshape(bsz, seq_length, -1)
        h = self.attn_norm(h + self.dropout(self.attn_out(ctx)))
        h = self.out_norm(h + self.dropout(self.output(nn.functional.gelu(self.intermediate(h)))))
        return {"last_hidden_state": h}


# ---- src/contriever.py ----
class Contriever(BertModel):
    def __init__(self, config, pooling="average", **kwargs):
        super().__init__(config, add_pooling_layer=False)
        if not hasattr(config, "pooling"):
            self.config.pooling = pooling

    def forward(
        self,
        input_ids=None,
        attention_mask=None,
        token_type_ids=None,
        position_ids=None,
        head_mask=None,
        inputs_embeds=None,
        encoder_hidden_states=None,
        encoder_attention_mask=None,
        output_attentions=None,
        output_hidden_states=None,
        normalize=False,
    ):

        model_output = super().forward(
            input_ids=input_ids,
            attention_mask=attention_mask,
            token_type_ids=token_type_ids,
            position_ids=position_ids,
            head_mask=head_mask,
            inputs_embeds=inputs_embeds,
            encoder_hidden_states=encoder_hidden_states,
            encoder_attention_mask=encoder_attention_mask,
            output_attentions=output_attentions,
            output_hidden_states=output_hidden_states,
        )

        last_hidden = model_output["last_hidden_state"]
        last_hidden = last_hidden.masked_fill(~attention_mask[..., None].bool(), 0.0)

        if self.config.pooling == "average":
            emb = last_hidden.sum(dim=1) / attention_mask.sum(dim=1)[..., None]
        elif self.config.pooling == "cls":
            emb = last_hidden[:, 0]

        if normalize:
            emb = torch.nn.functional.normalize(emb, dim=-1)
        return emb


# ---- src/dist_utils.py ----
class dist_utils:
    @staticmethod
    def gather(x: torch.tensor):
        if not dist.is_initialized():
            return x
        x_gather = Gather.apply(x)
        x_gather = torch.cat(x_gather, dim=0)
        return x_gather

    @staticmethod
    @torch.no_grad()
    def gather_nograd(x: torch.tensor):
        if not dist.is_initialized():
            return x
        x_gather = [torch.ones_like(x) for _ in range(dist.get_world_size())]
        dist.all_gather(x_gather, x, async_op=False)

        x_gather = torch.cat(x_gather, dim=0)
        return x_gather

    @staticmethod
    def get_rank():
        if not dist.is_available():
            return 0
        if not dist.is_initialized():
            return 0
        return dist.get_rank()


class Gather(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x: torch.tensor):
        output = [torch.zeros_like(x) for _ in range(dist.get_world_size())]
        dist.all_gather(output, x)
        return tuple(output)

    @staticmethod
    def backward(ctx, *grads):
        all_gradients = torch.stack(grads)
        dist.all_reduce(all_gradients)
        return all_gradients[dist.get_rank()]


def _load_retriever(opt):
    cfg = BertConfig()
    retriever = Contriever(cfg)
    retriever.config.pooling = opt.pooling
    return retriever, None


def make_batch(bsz, q_len, k_len, seed):
    g = torch.Generator().manual_seed(seed)
    q_tokens = torch.randint(1, 30, (bsz, q_len), generator=g)
    k_tokens = torch.randint(1, 30, (bsz, k_len), generator=g)
    q_mask = torch.ones(bsz, q_len, dtype=torch.long)
    k_mask = torch.ones(bsz, k_len, dtype=torch.long)
    q_mask[0, q_len - 2:] = 0
    k_mask[-1, k_len - 3:] = 0
    return q_tokens, q_mask, k_tokens, k_mask


def load_model():
    cfg = BertConfig()
    model = Contriever(cfg)
    model.eval()
    return torch.compile(model)


def make():
    torch.manual_seed(0)
    model = Contriever(BertConfig()).eval()
    q_tokens, q_mask, k_tokens, k_mask = make_batch(3, 6, 8, 0)
    token_type_ids = torch.zeros_like(k_tokens)
    return model, [
        (q_tokens, q_mask),
        (k_tokens[:2], k_mask[:2], token_type_ids[:2]),
    ]
