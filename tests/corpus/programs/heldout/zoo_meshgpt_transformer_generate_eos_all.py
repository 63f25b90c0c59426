"""MeshGPT generation: the decode loop stops with `if is_eos_codes.any(dim = -1).all(): break`, after masking [eos] except at face boundaries.

Source: lucidrains/meshgpt-pytorch@2efe22196082df22a0a7027636c2d9ae4d708748:meshgpt_pytorch/meshgpt_pytorch.py:1312-1420; lucidrains/x-transformers autoregressive_wrapper.py (eval_decorator, top_k)
Kept: MeshTransformer.generate (prompt flattening and length assert,
default batch size, empty code start, can_eos at face boundaries, the
cache_kv / cond_scale output handling, eos suppression, filter_logits_fn,
greedy vs multinomial sampling, append, the all-rows-eos break, cumsum pad
mask, round-down to whole faces, return_codes reshape); eval_decorator and
top_k as in x-transformers.
Simplified: forward_on_codes is an embedding + one causal attention layer +
head with no kv cache (returns logits only when return_cache is False, as
the original does); no text conditioning, no tqdm, no autoencoder decode
(returns the codes); vocab 10 with eos 9, 3 vertices x 1 quantizer.
"""
from functools import wraps
from math import ceil

import torch
import torch.nn.functional as F
from torch import nn


def exists(v):
    return v is not None


def default(v, d):
    return v if exists(v) else d


def divisible_by(num, den):
    return (num % den) == 0


def eval_decorator(fn):
    @wraps(fn)
    def inner(self, *args, **kwargs):
        was_training = self.training
        self.eval()
        out = fn(self, *args, **kwargs)
        self.train(was_training)
        return out
    return inner


def top_k(logits, frac_num_tokens = 0.1, k = None):
    num_tokens = logits.shape[-1]

    k = default(k, ceil(frac_num_tokens * num_tokens))
    k = min(k, num_tokens)

    val, ind = torch.topk(logits, k)
    probs = torch.full_like(logits, float('-inf'))
    probs.scatter_(1, ind, val)
    return probs


class MeshTransformer(nn.Module):
    def __init__(self, num_codes = 9, dim = 16, max_seq_len = 12, num_quantizers = 1, num_vertices_per_face = 3, pad_id = -1):
        super().__init__()
        self.num_quantizers = num_quantizers
        self.num_vertices_per_face = num_vertices_per_face
        self.max_seq_len = max_seq_len
        self.eos_token_id = num_codes
        self.pad_id = pad_id
        self.condition_on_text = False
        self.sos_token = nn.Parameter(torch.randn(dim))
        self.token_embed = nn.Embedding(num_codes + 1, dim)
        self.attn = nn.MultiheadAttention(dim, 2, batch_first = True)
        self.to_logits = nn.Linear(dim, num_codes + 1)
        self.register_buffer('eos_bias', torch.zeros(num_codes + 1))

    @property
    def device(self):
        return next(self.parameters()).device

    def forward_on_codes(self, codes = None, return_loss = True, return_cache = False, append_eos = True, cache = None, texts = None, text_embeds = None, cond_drop_prob = None, cond_scale = 1., cfg_routed_kwargs = None):
        batch = codes.shape[0]
        sos = self.sos_token[None, None].expand(batch, 1, -1)
        x = torch.cat((sos, self.token_embed(codes.clamp(min = 0))), dim = 1)
        n = x.shape[1]
        causal = torch.ones(n, n, dtype = torch.bool, device = x.device).triu(1)
        x = x + self.attn(x, x, x, attn_mask = causal, need_weights = False)[0]
        logits = self.to_logits(x) + self.eos_bias
        if not return_cache:
            return logits
        return logits, None

    @eval_decorator
    @torch.no_grad()
    def generate(
        self,
        prompt = None,
        batch_size = None,
        filter_logits_fn = top_k,
        filter_kwargs: dict = dict(),
        temperature = 1.,
        return_codes = False,
        texts = None,
        text_embeds = None,
        cond_scale = 1.,
        cache_kv = True,
        max_seq_len = None,
        face_coords_to_file = None
    ):
        max_seq_len = default(max_seq_len, self.max_seq_len)

        if exists(prompt):
            assert not exists(batch_size)

            prompt = prompt.reshape(prompt.shape[0], -1)
            assert prompt.shape[-1] <= self.max_seq_len

            batch_size = prompt.shape[0]

        batch_size = default(batch_size, 1)

        codes = default(prompt, torch.empty((batch_size, 0), dtype = torch.long, device = self.device))

        curr_length = codes.shape[-1]

        cache = (None, None)

        for i in range(curr_length, max_seq_len):

            # example below for triangles, extrapolate for quads
            # v1([q1] [q2] [q1] [q2] [q1] [q2]) v2([eos| q1] [q2] [q1] [q2] [q1] [q2]) -> 0 1 2 3 4 5 6 7 8 9 10 11 12 -> v1(F F F F F F) v2(T F F F F F) v3(T F F F F F)

            can_eos = i != 0 and divisible_by(i, self.num_quantizers * self.num_vertices_per_face)  # only allow for eos to be decoded at the end of each face, defined as 3 or 4 vertices with D residual VQ codes

            output = self.forward_on_codes(
                codes,
                text_embeds = text_embeds,
                return_loss = False,
                return_cache = cache_kv,
                append_eos = False,
                cond_scale = cond_scale,
                cfg_routed_kwargs = dict(
                    cache = cache
                )
            )

            if cache_kv:
                logits, cache = output

                if cond_scale == 1.:
                    cache = (cache, None)
            else:
                logits = output

            logits = logits[:, -1]

            if not can_eos:
                logits[:, -1] = -torch.finfo(logits.dtype).max

            filtered_logits = filter_logits_fn(logits, **filter_kwargs)

            if temperature == 0.:
                sample = filtered_logits.argmax(dim = -1)
            else:
                probs = F.softmax(filtered_logits / temperature, dim = -1)
                sample = torch.multinomial(probs, 1)

            if sample.ndim == 1:
                sample = sample[:, None]

            codes = torch.cat((codes, sample), dim = -1)

            # check for all rows to have [eos] to terminate

            is_eos_codes = (codes == self.eos_token_id)

            if is_eos_codes.any(dim = -1).all():
                break

        # mask out to padding anything after the first eos

        mask = is_eos_codes.float().cumsum(dim = -1) >= 1
        codes = codes.masked_fill(mask, self.pad_id)

        # remove a potential extra token from eos, if breaked early

        code_len = codes.shape[-1]
        round_down_code_len = code_len // self.num_vertices_per_face * self.num_vertices_per_face
        codes = codes[:, :round_down_code_len]

        # early return of raw residual quantizer codes

        if return_codes:
            codes = codes.reshape(codes.shape[0], -1, self.num_quantizers)
            return codes

        return codes


def sample_meshes(transformer, prompt, batch_size, temperature, max_seq_len):
    return transformer.generate(prompt = prompt, batch_size = batch_size, temperature = temperature,
                                filter_kwargs = dict(k = 3), return_codes = True, max_seq_len = max_seq_len)


compiled_sample = torch.compile(sample_meshes)


def make():
    torch.manual_seed(0)
    transformer = MeshTransformer()
    transformer.eos_bias[-1] = 6.0
    prompt = torch.tensor([[[1, 2, 3]], [[4, 5, 6]]])
    return sample_meshes, [
        (transformer, prompt, None, 0., 12),
        (transformer, None, 2, 1., 5),
    ]
