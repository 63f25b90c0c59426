"""Contriever in-batch-negatives training forward: `len(q_tokens)` batch size, `torch.arange` labels offset by `dist_utils.get_rank() * len(kemb)`, `dist_utils.gather` (returns its input when torch.distributed is not initialized), einsum scores over temperature, cross-entropy with label smoothing, then stats through `loss.item()` and `torch.std(...).mean().item()` into the `iter_stats={}` default dict.

Source: facebookresearch/contriever@39fb220:src/inbatch.py:17-87
Also: src/contriever.py:11-56 (Contriever forward: masked_fill, average/cls pooling, normalize),
src/dist_utils.py:7-30, 77-82 (Gather, gather, get_rank), src/options.py defaults, train.py:60.
Kept: InBatch.__init__ (minus checkpoint loading) and forward verbatim; Contriever.forward and the
dist_utils helpers verbatim.
Simplified: transformers' BertModel is a one-layer stand-in returning {"last_hidden_state"};
`_load_retriever` builds it from a local config (average pooling, the default); hidden 16,
batches of 4 and 3; `model.compile()` on the module as the entry.
"""
import logging
import math

import torch
import torch.distributed as dist
import torch.nn as nn

logger = logging.getLogger(__name__)


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


# ---- src/inbatch.py ----
class InBatch(nn.Module):
    def __init__(self, opt, retriever=None, tokenizer=None):
        super(InBatch, self).__init__()

        self.opt = opt
        self.norm_doc = opt.norm_doc
        self.norm_query = opt.norm_query
        self.label_smoothing = opt.label_smoothing
        if retriever is None or tokenizer is None:
            retriever, tokenizer = _load_retriever(opt)
        self.tokenizer = tokenizer
        self.encoder = retriever

    def get_encoder(self):
        return self.encoder

    def forward(self, q_tokens, q_mask, k_tokens, k_mask, stats_prefix="", iter_stats={}, **kwargs):

        bsz = len(q_tokens)
        labels = torch.arange(0, bsz, dtype=torch.long, device=q_tokens.device)

        qemb = self.encoder(input_ids=q_tokens, attention_mask=q_mask, normalize=self.norm_query)
        kemb = self.encoder(input_ids=k_tokens, attention_mask=k_mask, normalize=self.norm_doc)

        gather_fn = dist_utils.gather

        gather_kemb = gather_fn(kemb)

        labels = labels + dist_utils.get_rank() * len(kemb)

        scores = torch.einsum("id, jd->ij", qemb / self.opt.temperature, gather_kemb)

        loss = torch.nn.functional.cross_entropy(scores, labels, label_smoothing=self.label_smoothing)

        # log stats
        if len(stats_prefix) > 0:
            stats_prefix = stats_prefix + "/"
        iter_stats[f"{stats_prefix}loss"] = (loss.item(), bsz)

        predicted_idx = torch.argmax(scores, dim=-1)
        accuracy = 100 * (predicted_idx == labels).float().mean()
        stdq = torch.std(qemb, dim=0).mean().item()
        stdk = torch.std(kemb, dim=0).mean().item()
        iter_stats[f"{stats_prefix}accuracy"] = (accuracy, bsz)
        iter_stats[f"{stats_prefix}stdq"] = (stdq, bsz)
        iter_stats[f"{stats_prefix}stdk"] = (stdk, bsz)

        return loss, iter_stats


class Options:
    retriever_model_id = "bert-base-uncased"
    pooling = "average"
    random_init = True
    temperature = 0.05
    label_smoothing = 0.1
    norm_doc = False
    norm_query = False


def main():
    opt = Options()
    model = InBatch(opt)
    model.compile()
    model.train()
    return model


def make():
    torch.manual_seed(0)
    model = InBatch(Options()).train()
    return model, [
        make_batch(4, 6, 7, 0) + ("train",),
        make_batch(3, 5, 5, 1) + ("",),
    ]
