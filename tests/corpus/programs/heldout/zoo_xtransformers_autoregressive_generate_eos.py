"""x-transformers AutoregressiveWrapper.generate: the sampling loop stops early on `is_eos_tokens.any(dim = -1).all()`, after right-aligning variable-length prompts.

Source: lucidrains/x-transformers@9252ed7838021ee61e6c5be0930b3a9a88efdf06:x_transformers/autoregressive_wrapper.py:16-135,155-200,365-532
Kept: exists/default/cast_tuple/eval_decorator, pad_at_dim, align_right with
its asserts, the top_k/top_p/min_p filters and FILTER_LOGITS_FN, generate's
list-of-prompts handling, string filter lookup, max_seq_len window, cache
plumbing, greedy vs multinomial sampling, EOS stop and the post-EOS masking.
Simplified: einops pack/unpack of '* n' is a leading-dim unsqueeze; no
contrastive decoding or looped nets; the TransformerWrapper is an embedding,
a residual MLP and a logits head whose bias favours token 3, vocab 8.
"""
from __future__ import annotations

from math import ceil
from typing import Callable

import torch
import torch.nn.functional as F
from torch import nn, tensor, Tensor
from torch.nn import Module
from torch.nn.utils.rnn import pad_sequence


def exists(val):
    return val is not None


def default(val, d):
    return val if exists(val) else d


def identity(t, *args, **kwargs):
    return t


def join(arr, delimiter=', '):
    return delimiter.join(arr)


def cast_tuple(t, length=1):
    return t if isinstance(t, tuple) else (t,) * length


def eval_decorator(fn):
    def inner(self, *args, **kwargs):
        was_training = self.training
        self.eval()
        out = fn(self, *args, **kwargs)
        self.train(was_training)
        return out
    return inner


def pad_at_dim(t, pad: tuple[int, int], dim=-1, value=0.):
    if pad == (0, 0):
        return t

    dims_from_right = (- dim - 1) if dim < 0 else (t.ndim - dim - 1)
    zeros = ((0, 0) * dims_from_right)
    return F.pad(t, (*zeros, *pad), value=value)


def align_right(t, lens, pad_id=0):
    batch, seq_len, device, dtype = *t.shape[:2], t.device, t.dtype

    assert lens.ndim == 1 and lens.shape[0] == batch
    assert lens.amax() <= seq_len

    pad_lens = seq_len - lens
    max_pad_len = pad_lens.amax()

    batch_arange = torch.arange(batch, device=device, dtype=torch.long)[..., None]
    prompt_len_arange = torch.arange(seq_len, device=device, dtype=torch.long)

    t = pad_at_dim(t, (max_pad_len, 0), value=pad_id, dim=1)
    offset = max_pad_len - pad_lens

    aligned = t[batch_arange, prompt_len_arange + offset[..., None], ...]
    return aligned


def top_p(logits, thres=0.9):
    sorted_logits, sorted_indices = torch.sort(logits, descending=True)
    cum_probs = torch.cumsum(F.softmax(sorted_logits, dim=-1), dim=-1)

    sorted_indices_to_remove = cum_probs > thres
    sorted_indices_to_remove = F.pad(sorted_indices_to_remove, (1, -1), value=False)

    sorted_logits[sorted_indices_to_remove] = float('-inf')
    return sorted_logits.scatter(1, sorted_indices, sorted_logits)


def top_k(logits, frac_num_tokens=0.1, k=None):
    num_tokens = logits.shape[-1]

    k = default(k, ceil(frac_num_tokens * num_tokens))
    k = min(k, num_tokens)

    val, ind = torch.topk(logits, k)
    probs = torch.full_like(logits, float('-inf'))
    probs.scatter_(1, ind, val)
    return probs


def min_p(logits, min_p=0.1):
    probs = logits.softmax(dim=-1)
    max_probs = probs.amax(dim=-1, keepdim=True)
    limit = min_p * max_probs
    return torch.where(probs < limit, float('-inf'), logits)


FILTER_LOGITS_FN = dict(
    top_p=top_p,
    top_k=top_k,
    min_p=min_p
)


class TransformerWrapper(Module):
    def __init__(self, num_tokens=8, dim=8, max_seq_len=6):
        super().__init__()
        self.max_seq_len = max_seq_len
        self.can_cache_kv = False
        self.can_cache_kv_outside_max_seq_len = False
        self.looped = False
        self.add_continuous_pred_head = False
        self.token_emb = nn.Embedding(num_tokens, dim)
        self.pos_emb = nn.Embedding(max_seq_len, dim)
        self.ff = nn.Sequential(nn.Linear(dim, dim), nn.GELU(), nn.Linear(dim, dim))
        self.to_logits = nn.Linear(dim, num_tokens)

    def forward(self, x, return_intermediates=False, cache=None, seq_start_pos=None):
        pos = torch.arange(x.shape[-1], device=x.device)
        if exists(seq_start_pos):
            pos = (pos - seq_start_pos[..., None]).clamp(min=0)
        h = self.token_emb(x) + self.pos_emb(pos)
        h = h + self.ff(h)
        logits = self.to_logits(h)
        if return_intermediates:
            return logits, None
        return logits


class AutoregressiveWrapper(Module):
    def __init__(self, net, ignore_index=-100, pad_value=0, mask_prob=0.):
        super().__init__()
        self.pad_value = pad_value
        self.ignore_index = ignore_index

        self.net = net
        self.max_seq_len = net.max_seq_len

        assert mask_prob < 1.
        self.mask_prob = mask_prob

    @torch.no_grad()
    @eval_decorator
    def generate(
        self,
        prompts: list[Tensor] | Tensor,
        seq_len,
        eos_token=None,
        temperature=1.,
        prompt_lens: Tensor | None = None,
        filter_logits_fn: str | Callable = top_k,
        restrict_to_max_seq_len=True,
        filter_kwargs: dict = dict(),
        cache_kv=True,
        return_intermediates=False,
        **kwargs
    ):
        max_seq_len, greedy = self.max_seq_len, temperature == 0.

        # handle prompts given as list of variable lengthed token ids

        if isinstance(prompts, list):
            assert len(prompts) > 0, 'prompts cannot be empty list'
            assert not exists(prompt_lens), '`prompt_len` will be auto derived if prompts are passed in as list of Tensors'

            prompt_lens = tensor([t.shape[0] for t in prompts], device=prompts[0].device)

            prompts = pad_sequence(prompts, batch_first=True)

        # pack maybe no batch

        no_batch = prompts.ndim == 1
        if no_batch:
            prompts = prompts[None]

        b, t, device = *prompts.shape, prompts.device

        # handle filter logits fn given as string

        if isinstance(filter_logits_fn, str):
            assert filter_logits_fn in FILTER_LOGITS_FN, f"only {join(FILTER_LOGITS_FN.keys())} are available"

            filter_logits_fn = FILTER_LOGITS_FN[filter_logits_fn]

        # handle variable lengthed prompts (prefixes)

        seq_start_pos = None
        if exists(prompt_lens):
            prompts = align_right(prompts, prompt_lens, pad_id=self.pad_value)
            seq_start_pos = t - prompt_lens

        # output from which sampled tokens appended to

        out = prompts

        # kv caches

        cache = None

        # sampling up to seq_len

        for _ in range(seq_len):

            if restrict_to_max_seq_len:
                max_len_exceeded = out.shape[-1] > max_seq_len

                assert not (cache_kv and max_len_exceeded and not self.net.can_cache_kv_outside_max_seq_len), 'the network cannot use cached key values when decoding outside the max sequence length. most likely because you are using absolute positional embedding. you can switch to rotary embeddings to resolve this issue'

                x = out[:, -max_seq_len:]

            logits, new_cache = self.net(
                x,
                return_intermediates=True,
                cache=cache,
                seq_start_pos=seq_start_pos,
                **kwargs
            )

            if cache_kv and self.net.can_cache_kv:
                cache = new_cache

            logits = logits[:, -1]

            # filter by top_k, top_p (nucleus), top_a, or custom

            if greedy:
                sample = logits.argmax(dim=-1, keepdim=True)
            else:
                filtered_logits = filter_logits_fn(logits, **filter_kwargs)
                probs = F.softmax(filtered_logits / temperature, dim=-1)
                sample = torch.multinomial(probs, 1)

            # concat sample

            out = torch.cat((out, sample), dim=-1)

            if not exists(eos_token):
                continue

            is_eos_tokens = (out == eos_token)

            if is_eos_tokens.any(dim=-1).all():
                break

        if exists(eos_token):
            # mask out everything after the eos tokens
            shifted_is_eos_tokens = F.pad(is_eos_tokens, (1, -1))
            mask = shifted_is_eos_tokens.float().cumsum(dim=-1) >= 1
            out = out.masked_fill(mask, self.pad_value)

        out = out[:, t:]

        if no_batch:
            out = out[0]

        if not return_intermediates:
            return out

        return out, cache


def build_sampler():
    net = TransformerWrapper()
    with torch.no_grad():
        net.to_logits.bias[3] = 4.0  # a model that ends sentences readily
    return AutoregressiveWrapper(net)


sampler = build_sampler()
sampler.generate = torch.compile(sampler.generate)


def make():
    torch.manual_seed(0)
    wrapper = build_sampler()
    prompts = torch.tensor([[1, 2, 5], [4, 6, 7]])
    ragged = [torch.tensor([1, 2]), torch.tensor([5, 6, 7])]
    return wrapper.generate, [
        (prompts, 3, 3, 0.),
        (prompts, 3, 5, 0.),
        (ragged, 2, None, 1.0, None, "min_p"),
        (torch.tensor([2, 4]), 2, 3, 0.7, None, "top_p"),
    ]
