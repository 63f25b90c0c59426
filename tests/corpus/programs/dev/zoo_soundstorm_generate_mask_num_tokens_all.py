"""SoundStorm.generate: MaskGIT-style demasking per quantizer level, with `if (mask_num_tokens == 0).all(): continue` on the scheduled token counts, gumbel sampling with a Python-float temperature, top-k filtering and score-sorted remasking, inside an `eval_decorator` that flips `model.eval()`/`model.train(...)`.

Source: lucidrains/soundstorm-pytorch@8119522e45fd8c5925a70cad0daf94d5012997ce:soundstorm_pytorch/soundstorm.py:849-1068
Also: soundstorm_pytorch/soundstorm.py:36-140 (exists/default/eval_decorator/top_k/log/
gumbel_noise/gumbel_sample/linear_schedule/cosine_schedule), 552-672 (ConformerWrapper:
quantizer offsets, code embeddings, heads, per-quantizer logits, forward), 693-834
(SoundStorm.__init__: mask_id, steps, schedule_fn, self_cond, token critic switch).
Kept: generate's unconditional path verbatim (batch/num_latents defaults, times
linspace, seq/seq_mask setup, the q_level loop over zip(mask_num_tokens, reversed(range(steps))),
self-conditioning plumbing, the `.all()` continue, default scores from softmax,
argsort-argsort ranking, upper/lower quantizer masking, masked_fill with mask_id,
sample_one squeeze); ConformerWrapper.forward's structure.
Simplified: einops rearrange/reduce/repeat/EinMix become reshape/sum/repeat_interleave
and a per-quantizer weight einsum; the Conformer is a two-layer MLP stand-in
(mask unused); no text/semantic conditioning, prompts or soundstream decoding;
tqdm dropped; beartype dropped; codebook 8, 2 quantizers, dim 16, 4 steps.
"""
from __future__ import annotations

import math
from functools import wraps

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn import Module


def exists(val):
    return val is not None

def default(val, d):
    return val if exists(val) else d

def divisible_by(numer, denom):
    return (numer % denom) == 0

def eval_decorator(fn):
    @wraps(fn)
    def inner(model, *args, **kwargs):
        was_training = model.training
        model.eval()
        out = fn(model, *args, **kwargs)
        model.train(was_training)
        return out
    return inner

# sampling helpers

def top_k(logits, thres = 0.9):
    k = math.ceil((1 - thres) * logits.shape[-1])
    val, ind = logits.topk(k, dim = -1)
    probs = torch.full_like(logits, float('-inf'))
    probs.scatter_(2, ind, val)
    return probs

def log(t, eps = 1e-10):
    return torch.log(t + eps)

def gumbel_noise(t):
    noise = torch.zeros_like(t).uniform_(0, 1)
    return -log(-log(noise))

def gumbel_sample(t, temperature = 1., dim = -1):
    return ((t / max(temperature, 1e-10)) + gumbel_noise(t)).argmax(dim = dim)

# schedules

def linear_schedule(t):
    return 1 - t

def cosine_schedule(t):
    """ https://arxiv.org/abs/2202.04200 """
    return torch.cos(t * math.pi / 2)


class StandInConformer(Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim
        self.net = nn.Sequential(nn.Linear(dim, dim * 2), nn.GELU(), nn.Linear(dim * 2, dim))

    def forward(self, x, mask = None):
        return x + self.net(x)


class ConformerWrapper(Module):
    def __init__(
        self,
        *,
        codebook_size,
        num_quantizers,
        conformer: Module,
        grouped_quantizers = 1
    ):
        super().__init__()
        self.conformer = conformer

        dim = self.conformer.dim

        self.embedding_proj = nn.Sequential(
            nn.Linear(dim * grouped_quantizers, dim),
            nn.LayerNorm(dim)
        ) if grouped_quantizers > 1 else nn.Identity()

        num_codes_with_mask = codebook_size + 1
        num_effective_quantizers = num_quantizers * grouped_quantizers

        self.code_embeds = nn.Embedding(num_codes_with_mask * num_effective_quantizers, dim)

        self.register_buffer('quantizer_offsets', torch.arange(num_effective_quantizers) * num_codes_with_mask, persistent = False)
        self.register_buffer('mask_tokens', self.quantizer_offsets + num_codes_with_mask, persistent = False)

        self.dim = dim
        self.codebook_size = codebook_size

        self.num_codes_with_mask = num_codes_with_mask
        self.num_quantizers = num_quantizers
        self.grouped_quantizers = grouped_quantizers

        self.heads = nn.Linear(dim, dim * num_effective_quantizers)

        self.num_effective_quantizers = num_effective_quantizers

        # EinMix('b n gq d -> b n gq l', weight_shape = 'gq d l', bias_shape = 'gq l')
        self.logits_norm = nn.LayerNorm(dim)
        self.logits_weight = nn.Parameter(torch.randn(num_effective_quantizers, dim, codebook_size) * dim ** -0.5)
        self.logits_bias = nn.Parameter(torch.zeros(num_effective_quantizers, codebook_size))
        self.to_logits = True

    def forward(
        self,
        x,
        *,
        mask = None,
        cond = None,
        sum_embeds = None,
        return_embeddings = False,
        return_logits_and_embeddings = False
    ):
        n, q, g = x.shape[-1], self.num_quantizers, self.grouped_quantizers
        assert divisible_by(n, g * q), 'sequence must be divisible by number of quantizers'

        x = x.reshape(x.shape[0], -1, g * q)
        x = x + self.quantizer_offsets

        x = self.code_embeds(x)

        x = x.reshape(*x.shape[:2], g, q, -1).sum(dim = 3).reshape(*x.shape[:2], -1)

        x = self.embedding_proj(x)

        if exists(sum_embeds):
            if sum_embeds.ndim == 3:
                sum_embeds = sum_embeds.reshape(sum_embeds.shape[0], -1, self.num_effective_quantizers, sum_embeds.shape[-1]).sum(dim = 2)

            x = x + sum_embeds

        if exists(cond):
            if cond.ndim == 2:
                cond = cond[:, None, :]

            x = x + cond

        x = self.conformer(x, mask = mask)
        embeds = self.heads(x)
        embeds = embeds.reshape(embeds.shape[0], -1, embeds.shape[-1] // self.num_effective_quantizers)

        if return_embeddings or not exists(self.to_logits):
            return embeds

        h = self.logits_norm(embeds).reshape(embeds.shape[0], -1, self.num_effective_quantizers, self.dim)
        logits = torch.einsum('b n g d, g d l -> b n g l', h, self.logits_weight) + self.logits_bias
        logits = logits.reshape(logits.shape[0], -1, logits.shape[-1])

        if return_logits_and_embeddings:
            return logits, embeds

        return logits


class SoundStorm(Module):
    def __init__(
        self,
        net: ConformerWrapper,
        *,
        steps = 18,
        self_cond = False,
        schedule = 'linear',
        can_mask_prev_unmasked = True,
    ):
        super().__init__()

        self.net = net
        dim = net.dim
        self.dim = dim
        self.num_tokens = net.codebook_size

        self.soundstream = None
        self.should_condition = False

        self.num_quantizers = net.num_quantizers
        self.grouped_quantizers = net.grouped_quantizers

        self.mask_id = net.codebook_size

        self.steps = steps

        if callable(schedule):
            self.schedule_fn = schedule
        if schedule == 'linear':
            self.schedule_fn = linear_schedule
        elif schedule == 'cosine':
            self.schedule_fn = cosine_schedule
        else:
            raise ValueError(f'invalid schedule {schedule}')

        self.can_mask_prev_unmasked = can_mask_prev_unmasked

        # self conditioning

        self.self_cond = self_cond

        if self_cond:
            self.null_embed = nn.Parameter(torch.randn(dim))
            self.to_self_cond = nn.Linear(dim, dim, bias = False) if self_cond else None

        # token critic

        self.token_critic = None

    @property
    def device(self):
        return next(self.net.parameters()).device

    def maybe_get_condition(self, token_ids = None, length = None):
        assert not exists(token_ids)
        return None

    @torch.no_grad()
    @eval_decorator
    def generate(
        self,
        num_latents = None,
        *,
        mask = None,
        batch_size = None,
        start_temperature = 1.,
        filter_thres = 0.7,
        noise_level_scale = 1.,
        num_full_sampling_levels = 1,
        **kwargs
    ):
        cond_tokens = self.maybe_get_condition(None)

        # determine batch size and sequence length, which depends whether it is conditioning

        if exists(cond_tokens):
            batch_size, num_latents = cond_tokens.shape[:2]
            sample_one = batch_size == 1
        else:
            sample_one = not exists(batch_size)
            batch_size = default(batch_size, 1)

            assert exists(num_latents)

        # determine sequence length

        num_effective_quantizers = self.grouped_quantizers * self.num_quantizers
        seq_len = num_latents * num_effective_quantizers

        # device and time

        device = self.device

        times = torch.linspace(0., 1., self.steps + 1, device = device)

        # sequence starts off as all masked

        shape = (batch_size, seq_len)

        seq = torch.full(shape, self.mask_id, device = device)

        seq_mask = mask

        if not exists(seq_mask):
            seq_mask = torch.ones((batch_size, num_latents), device = device, dtype = torch.bool)

        seq_mask_with_quantizer = seq_mask.repeat_interleave(num_effective_quantizers, dim = -1)

        mask = torch.full(shape, True, device = device)

        prompt_mask = None

        # slowly demask

        seq_len_from_mask = seq_mask.sum(dim = -1)

        rand_mask_probs = self.schedule_fn(times[1:])
        rand_mask_probs = rand_mask_probs[:, None]

        all_mask_num_tokens = (rand_mask_probs * seq_len_from_mask).long()

        prev_mask = None

        # self conditioning

        has_self_cond = self.self_cond
        last_embed = self.null_embed if has_self_cond else None

        for q_level in range(num_effective_quantizers):
            mask_num_tokens_for_q_level = all_mask_num_tokens if q_level < num_full_sampling_levels else torch.zeros((1, batch_size), dtype = torch.long, device = device)

            for mask_num_tokens, steps_until_x0 in zip(mask_num_tokens_for_q_level, reversed(range(self.steps))):

                self_cond = self.to_self_cond(last_embed) if has_self_cond else None

                logits, embeds = self.net(
                    seq,
                    mask = seq_mask,
                    cond = cond_tokens,
                    sum_embeds = self_cond,
                    return_logits_and_embeddings = True,
                    **kwargs
                )

                if has_self_cond:
                    last_embed = embeds

                if exists(filter_thres):
                    logits = top_k(logits, filter_thres)

                annealing_scale = steps_until_x0 / self.steps
                temperature = start_temperature * annealing_scale

                sampled_ids = gumbel_sample(logits, temperature = max(temperature, 1e-3))

                # don't sample for lower quantizer levels

                if q_level > 0:
                    sample_mask = mask.reshape(mask.shape[0], -1, num_effective_quantizers)
                    sample_mask[:, :, :q_level] = False
                    sample_mask = sample_mask.reshape(sample_mask.shape[0], -1)
                else:
                    sample_mask = mask

                seq = torch.where(sample_mask, sampled_ids, seq)

                if (mask_num_tokens == 0).all():
                    continue

                if exists(self.token_critic):
                    scores = self.token_critic(seq)
                    scores = scores[..., 0]
                    scores = scores + noise_level_scale * gumbel_noise(scores) * annealing_scale
                else:
                    scores = 1 - logits.softmax(dim = -1)
                    scores = scores.gather(2, sampled_ids[..., None])
                    scores = scores[..., 0]

                mask = torch.zeros_like(scores, dtype = torch.bool)

                # mask based on highest score

                mask_value = -torch.finfo(scores.dtype).max

                scores = scores.masked_fill(~seq_mask_with_quantizer, mask_value)

                if not self.can_mask_prev_unmasked and exists(prev_mask):
                    scores = scores.masked_fill(~prev_mask, mask_value)

                scores_sorted = scores.argsort(dim = -1, descending = True).argsort(dim = -1)

                mask_num_tokens = mask_num_tokens[:, None]

                mask = scores_sorted < mask_num_tokens

                if not self.can_mask_prev_unmasked:
                    prev_mask = mask.clone()

                mask = mask.reshape(mask.shape[0], -1, num_effective_quantizers)

                # mask all upper quantizer levels

                if q_level < (num_effective_quantizers - 1):
                    mask[:, :, q_level + 1:] = True

                # unmask all lower quantizer levels

                if q_level > 0:
                    mask[:, :, :q_level] = False

                mask = mask.reshape(mask.shape[0], -1)

                if exists(prompt_mask):
                    mask = mask & prompt_mask

                seq = seq.masked_fill(mask, self.mask_id)

        out = seq

        if sample_one:
            out = out[0]

        return out


def build_soundstorm():
    conformer = StandInConformer(dim = 16)
    net = ConformerWrapper(codebook_size = 8, num_quantizers = 2, conformer = conformer)
    return SoundStorm(net, steps = 4, self_cond = True, schedule = 'cosine', can_mask_prev_unmasked = False)


model = build_soundstorm()
generate = torch.compile(model.generate)


def make():
    torch.manual_seed(0)
    model = build_soundstorm()
    return model.generate, [(4,), (6,)]
