"""Phenaki sampling: MaskGIT demasking rounds where the number of tokens to re-mask is `num_tokens_mask.item()` fed to `scores.topk`, with token-critic or confidence scores and a noise-anneal schedule chosen by config string.

Source: lucidrains/phenaki-pytorch@9415d4e6e808d941f827c2926e72f43a434eedb1:phenaki_pytorch/phenaki_pytorch.py:417-560
Also: phenaki_pytorch.py:26-95 (helpers, eval_decorator, uniform, gumbel_sample),
phenaki_pytorch.py:149-211 (MaskGit.forward_with_cond_scale and forward).
Kept: Phenaki.sample's loop verbatim from the token ids on (first/last step flags, cosine
number of masked tokens with `.item()`, scatter mask, torch.where demasking, gumbel sample,
critic scores with the 'fixed'/'decay'/'increase' noise schedule, confidence scores otherwise).
Simplified: no CViViT/T5/priming (the sampler returns token ids; num_tokens comes from
the config); the MaskGit and critic transformers are LayerNorm+Linear; TokenCritic reuses
MaskGit with a 1-logit head; dim 8, 10 tokens, 3 steps.
"""
import math

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn import Module


def exists(val):
    return val is not None


def default(val, d):
    return val if exists(val) else d


def get_mask_subset_with_prob(mask, prob):
    batch, seq_len, device = *mask.shape, mask.device

    num_tokens = mask.sum(dim = -1)
    num_pads = seq_len - num_tokens
    num_masked = (prob * num_tokens).round().clamp(min = 1)

    randperm_indices = torch.rand((batch, seq_len), device = device).argsort(dim = -1)
    randperm_indices -= num_pads[:, None]
    randperm_indices.masked_fill_(randperm_indices < 0, seq_len) # set to max out of bounds, so never chosen

    mask_subset = randperm_indices < num_masked[:, None]
    return mask_subset


def eval_decorator(fn):
    def inner(model, *args, **kwargs):
        was_training = model.training
        model.eval()
        out = fn(model, *args, **kwargs)
        model.train(was_training)
        return out
    return inner


def uniform(shape, device):
    return torch.zeros(shape, device = device).float().uniform_(0, 1)


def prob_mask_like(shape, prob, device):
    if prob == 1:
        return torch.ones(shape, device = device, dtype = torch.bool)
    elif prob == 0:
        return torch.zeros(shape, device = device, dtype = torch.bool)
    else:
        return torch.zeros(shape, device = device).float().uniform_(0, 1) < prob


def log(t, eps = 1e-10):
    return torch.log(t + eps)


def gumbel_noise(t):
    noise = torch.zeros_like(t).uniform_(0, 1)
    return -log(-log(noise))


def gumbel_sample(t, temperature = 1., dim = -1):
    return ((t / max(temperature, 1e-10)) + gumbel_noise(t)).argmax(dim = dim)


class MaskGit(Module):
    def __init__(self, *, dim, num_tokens, max_seq_len, gradient_shrink_alpha = 0.1):
        super().__init__()
        self.mask_id = num_tokens
        self.max_seq_len = max_seq_len
        self.gradient_shrink_alpha = gradient_shrink_alpha

        self.token_emb = nn.Embedding(num_tokens + 1, dim)
        self.pos_emb = nn.Embedding(max_seq_len, dim)
        self.null_context = nn.Parameter(torch.randn(dim))

        self.transformer = nn.Sequential(nn.LayerNorm(dim), nn.Linear(dim, dim), nn.GELU())
        self.to_logits = nn.Linear(dim, num_tokens)

    def forward_with_cond_scale(
        self,
        *args,
        cond_scale = 3,
        **kwargs
    ):
        logits = self.forward(*args, cond_drop_prob = 0., **kwargs)

        if cond_scale == 1:
            return logits

        null_logits = self.forward(*args, cond_drop_prob = 1., **kwargs)
        return null_logits + (logits - null_logits) * cond_scale

    def forward(
        self,
        x,
        cond_drop_prob = 0.,
        text_mask = None,
        video_mask = None,
        video_patch_shape = None,
        return_embeds = False,
        **kwargs
    ):
        assert x.ndim in {2, 4}, 'video token ids must be of shape (batch, seq) or (batch, frame, height, width)'

        if x.ndim == 4:
            video_patch_shape = x.shape[1:]
            x = x.reshape(x.shape[0], -1)

        b, n, device = *x.shape, x.device

        if not exists(text_mask):
            text_mask = torch.ones((b, n), device = device, dtype = torch.bool)

        if cond_drop_prob > 0:
            keep_mask = prob_mask_like((b,), 1 - cond_drop_prob, device = device)
            text_mask = keep_mask[:, None] & text_mask

        x = self.token_emb(x)

        assert n <= self.max_seq_len, f'the video token sequence length you are passing in ({n}) is greater than the `max_seq_len` ({self.max_seq_len}) set on your `MaskGit`'
        x = self.pos_emb(torch.arange(n, device = device)) + x

        x = x * self.gradient_shrink_alpha + x.detach() * (1 - self.gradient_shrink_alpha)

        x = torch.where(text_mask[..., None], x, self.null_context)
        x = self.transformer(x)

        if return_embeds:
            return x

        return self.to_logits(x)


class TokenCritic(MaskGit):
    def __init__(self, *, dim, num_tokens, max_seq_len, **kwargs):
        super().__init__(dim = dim, num_tokens = num_tokens, max_seq_len = max_seq_len, **kwargs)
        self.to_logits = nn.Linear(dim, 1)

    def forward(self, x, **kwargs):
        return super().forward(x, **kwargs).squeeze(-1)


class Phenaki(Module):
    def __init__(self, *, maskgit, critic = None, steps = 3, num_tokens = 6, critic_noise_anneal_schedule = 'decay'):
        super().__init__()
        self.maskgit = maskgit
        self.critic = critic
        self.mask_id = maskgit.mask_id
        self.steps = steps
        self.num_tokens = num_tokens
        self.critic_noise_anneal_schedule = critic_noise_anneal_schedule

    @eval_decorator
    @torch.no_grad()
    def sample(
        self,
        *,
        batch_size = 1,
        cond_scale = 3.,
        starting_temperature = 0.9,
        noise_K = 1.
    ):
        device = next(self.parameters()).device

        num_tokens = self.num_tokens
        patch_shape = (1, 2, 3)
        text_embeds = text_mask = None

        shape = (batch_size, num_tokens)

        video_token_ids = torch.full(shape, self.mask_id, device = device)
        mask = torch.ones(shape, device = device, dtype = torch.bool)

        scores = None # keeping track of the confidence or critic scores, determining what should be masked at the next iteration

        for step in range(self.steps):
            is_first_step = step == 0
            is_last_step = step == (self.steps - 1)

            steps_til_x0 = self.steps - (step + 1)

            if not is_first_step and exists(scores):
                time = torch.full((1,), step / self.steps, device = device)
                num_tokens_mask = (num_tokens * torch.cos(time * math.pi * 0.5)).round().long().clamp(min = 1)

                _, indices = scores.topk(num_tokens_mask.item(), dim = -1)
                mask = torch.zeros(shape, device = device).scatter(1, indices, 1).bool()

            video_token_ids = torch.where(mask, self.mask_id, video_token_ids)

            input_token_ids = video_token_ids

            logits = self.maskgit.forward_with_cond_scale(
                input_token_ids,
                video_patch_shape = patch_shape,
                context = text_embeds,
                text_mask = text_mask,
                cond_scale = cond_scale
            )

            temperature = starting_temperature * (steps_til_x0 / self.steps)
            pred_video_ids = gumbel_sample(logits, temperature = temperature)

            video_token_ids = torch.where(mask, pred_video_ids, video_token_ids)

            if not is_last_step:
                if exists(self.critic):
                    critic_kwargs = dict(
                        video_patch_shape = patch_shape,
                        context = text_embeds,
                        text_mask = text_mask,
                        cond_scale = cond_scale
                    )

                    with torch.no_grad():
                        critic_input_token_ids = video_token_ids

                        scores = self.critic.forward_with_cond_scale(
                            critic_input_token_ids,
                            **critic_kwargs
                        )

                    if self.critic_noise_anneal_schedule == 'fixed':
                        noise_multiplier = 1.
                    elif self.critic_noise_anneal_schedule == 'decay':
                        noise_multiplier = steps_til_x0 / self.steps
                    elif self.critic_noise_anneal_schedule == 'increase':
                        noise_multiplier = (step + 1) / self.steps
                    else:
                        raise ValueError(f'invalid critic noise anneal schedule name')

                    noise = noise_K * (uniform(scores.shape, device) - 0.5) * noise_multiplier
                    scores = scores + noise
                else:
                    probs = logits.softmax(dim = -1)
                    scores = probs.gather(2, pred_video_ids[..., None])
                    scores = 1 - scores[..., 0]
                    scores = torch.where(mask, scores, -1e4)

        return video_token_ids

    def forward(self, batch_size = 1, cond_scale = 3.):
        return self.sample(batch_size = batch_size, cond_scale = cond_scale)


def build(with_critic):
    maskgit = MaskGit(dim = 8, num_tokens = 10, max_seq_len = 16)
    critic = TokenCritic(dim = 8, num_tokens = 10, max_seq_len = 16) if with_critic else None
    return Phenaki(maskgit = maskgit, critic = critic)


def main():
    phenaki = torch.compile(build(with_critic = True))
    return phenaki(2)


def make():
    torch.manual_seed(0)
    return build(with_critic = True), [(2,), (1, 1.)]
