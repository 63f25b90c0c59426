"""Bark generate_text_semantic: the sampling loop appends the EOS logit, optionally filters top-p in numpy and top-k by masked assignment, and stops on `item_next == SEMANTIC_VOCAB_SIZE or probs[-1] >= min_eos_p`.

Source: suno-ai/bark@f4f32d4cd480dfec1c245d258174bc9bde3c2148:bark/generation.py:377-514
Also: bark/model.py:168-218 (GPT.forward with merge_context), bark/generation.py:42-50,350-353 (constants).
Kept: the body under `with _inference_mode():` verbatim (kv-cache input
choice, the merged-context model call, the EOS logit hstack, the numpy
top-p block, top-k masked assignment, multinomial, the early-stop `if` with
`or`, the duration and last-step breaks, torch.cat), GPT.forward's
merge_context embedding sum, position ids and last-position lm_head.
Simplified: the loop is lifted into `sample_semantic(model, x, ...)`
(tokenization, history prompt loading and model preloading stay outside);
tqdm progress-bar updates are dropped; n_tot_steps is a parameter (8) instead
of 768; the transformer blocks are one MLP block stand-in without kv cache;
n_embd 8.
"""
import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

SEMANTIC_RATE_HZ = 49.9
SEMANTIC_VOCAB_SIZE = 10_000
TEXT_ENCODING_OFFSET = 10_048
SEMANTIC_PAD_TOKEN = 10_000
TEXT_PAD_TOKEN = 129_595
SEMANTIC_INFER_TOKEN = 129_599


def softmax(x):
    e_x = np.exp(x - np.max(x))
    return e_x / e_x.sum()


class GPTConfig:
    block_size = 1024
    input_vocab_size = 129_600
    output_vocab_size = 10_048
    n_layer = 1
    n_embd = 8
    dropout = 0.0


class Block(nn.Module):
    """Stand-in for bark's transformer Block (no kv cache)."""

    def __init__(self, config):
        super().__init__()
        self.ln = nn.LayerNorm(config.n_embd)
        self.mlp = nn.Linear(config.n_embd, config.n_embd)

    def forward(self, x, past_kv=None, use_cache=False):
        return x + self.mlp(self.ln(x)), None


class GPT(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.transformer = nn.ModuleDict(dict(
            wte = nn.Embedding(config.input_vocab_size, config.n_embd),
            wpe = nn.Embedding(config.block_size, config.n_embd),
            drop = nn.Dropout(config.dropout),
            h = nn.ModuleList([Block(config) for _ in range(config.n_layer)]),
            ln_f = nn.LayerNorm(config.n_embd),
        ))
        self.lm_head = nn.Linear(config.n_embd, config.output_vocab_size, bias=False)

    def forward(self, idx, merge_context=False, past_kv=None, position_ids=None, use_cache=False):
        device = idx.device
        b, t = idx.size()
        if past_kv is not None:
            assert t == 1
            tok_emb = self.transformer.wte(idx) # token embeddings of shape (b, t, n_embd)
        else:
            if merge_context:
                assert(idx.shape[1] >= 256+256+1)
                t = idx.shape[1] - 256
            else:
                assert t <= self.config.block_size, f"Cannot forward sequence of length {t}, block size is only {self.config.block_size}"

            # forward the GPT model itself
            if merge_context:
                tok_emb = torch.cat([
                    self.transformer.wte(idx[:,:256]) + self.transformer.wte(idx[:,256:256+256]),
                    self.transformer.wte(idx[:,256+256:])
                ], dim=1)
            else:
                tok_emb = self.transformer.wte(idx) # token embeddings of shape (b, t, n_embd)

        if past_kv is None:
            past_length = 0
            past_kv = tuple([None] * len(self.transformer.h))
        else:
            past_length = past_kv[0][0].size(-2)

        if position_ids is None:
            position_ids = torch.arange(past_length, t + past_length, dtype=torch.long, device=device)
            position_ids = position_ids.unsqueeze(0) # shape (1, t)
            assert position_ids.shape == (1, t)

        pos_emb = self.transformer.wpe(position_ids) # position embeddings of shape (1, t, n_embd)

        x = self.transformer.drop(tok_emb + pos_emb)

        new_kv = () if use_cache else None

        for i, (block, past_layer_kv) in enumerate(zip(self.transformer.h, past_kv)):
            x, kv = block(x, past_kv=past_layer_kv, use_cache=use_cache)

            if use_cache:
                new_kv = new_kv + (kv,)

        x = self.transformer.ln_f(x)

        # inference-time mini-optimization: only forward the lm_head on the very last position
        logits = self.lm_head(x[:, [-1], :]) # note: using list [-1] to preserve the time dim

        return (logits, new_kv)


@torch.compile(dynamic=True)
def sample_semantic(model, x, temp=0.7, top_k=None, top_p=None, min_eos_p=0.2, max_gen_duration_s=None,
                    allow_early_stop=True, use_kv_caching=False, n_tot_steps=768):
    tot_generated_duration_s = 0
    kv_cache = None
    for n in range(n_tot_steps):
        if use_kv_caching and kv_cache is not None:
            x_input = x[:, [-1]]
        else:
            x_input = x
        logits, kv_cache = model(
            x_input, merge_context=True, use_cache=use_kv_caching, past_kv=kv_cache
        )
        relevant_logits = logits[0, 0, :SEMANTIC_VOCAB_SIZE]
        if allow_early_stop:
            relevant_logits = torch.hstack(
                (relevant_logits, logits[0, 0, [SEMANTIC_PAD_TOKEN]])  # eos
            )
        if top_p is not None:
            # faster to convert to numpy
            original_device = relevant_logits.device
            relevant_logits = relevant_logits.detach().cpu().type(torch.float32).numpy()
            sorted_indices = np.argsort(relevant_logits)[::-1]
            sorted_logits = relevant_logits[sorted_indices]
            cumulative_probs = np.cumsum(softmax(sorted_logits))
            sorted_indices_to_remove = cumulative_probs > top_p
            sorted_indices_to_remove[1:] = sorted_indices_to_remove[:-1].copy()
            sorted_indices_to_remove[0] = False
            relevant_logits[sorted_indices[sorted_indices_to_remove]] = -np.inf
            relevant_logits = torch.from_numpy(relevant_logits)
            relevant_logits = relevant_logits.to(original_device)
        if top_k is not None:
            v, _ = torch.topk(relevant_logits, min(top_k, relevant_logits.size(-1)))
            relevant_logits[relevant_logits < v[-1]] = -float("Inf")
        probs = F.softmax(relevant_logits / temp, dim=-1)
        item_next = torch.multinomial(probs, num_samples=1).to(torch.int32)
        if allow_early_stop and (
            item_next == SEMANTIC_VOCAB_SIZE
            or (min_eos_p is not None and probs[-1] >= min_eos_p)
        ):
            # eos found, so break
            break
        x = torch.cat((x, item_next[None]), dim=1)
        tot_generated_duration_s += 1 / SEMANTIC_RATE_HZ
        if max_gen_duration_s is not None and tot_generated_duration_s > max_gen_duration_s:
            break
        if n == n_tot_steps - 1:
            break
        del logits, relevant_logits, probs, item_next
    return x


def make():
    torch.manual_seed(0)
    model = GPT(GPTConfig()).eval()
    encoded_text = np.array([5, 17, 42, 8]) + TEXT_ENCODING_OFFSET
    encoded_text = np.pad(encoded_text, (0, 256 - len(encoded_text)), constant_values=TEXT_PAD_TOKEN, mode="constant")
    semantic_history = np.array([SEMANTIC_PAD_TOKEN] * 256)
    x = torch.from_numpy(
        np.hstack([encoded_text, semantic_history, np.array([SEMANTIC_INFER_TOKEN])]).astype(np.int64)
    )[None]
    with torch.no_grad():
        eos_model = GPT(GPTConfig()).eval()
        eos_model.transformer.ln_f.bias.fill_(1.0)
        eos_model.lm_head.weight[SEMANTIC_PAD_TOKEN] = 5.0  # EOS logit dominates: stops at the first step
    return sample_semantic._torchdynamo_orig_callable, [
        (model, x, 0.7, 50, None, 0.2, None, True, False, 8),
        (model, x, 0.7, None, 0.9, None, 0.05, True, False, 8),
        (eos_model, x, 0.7, None, None, 0.2, None, True, False, 8),
    ]
