"""Phenaki training step: a cosine-scheduled token mask from `get_mask_subset_with_prob`, MaskGit logits read through `logits[mask_token_mask]` for the cross entropy, then the token critic on gumbel-sampled ids.

Source: lucidrains/phenaki-pytorch@9415d4e6e808d941f827c2926e72f43a434eedb1:phenaki_pytorch/phenaki_pytorch.py:560-690
Also: phenaki_pytorch.py:26-95 (helpers, get_mask_subset_with_prob, prob_mask_like, gumbel_sample),
phenaki_pytorch.py:149-211 (MaskGit.forward_with_cond_scale and forward).
Kept: Phenaki.forward from the codebook ids on (rand_step, cosine mask prob, video_mask
default, torch.where masking, only_train_critic/only_train_generator flags, the boolean-mask
cross entropy, gumbel sample, critic labels and loss); MaskGit.forward's prologue.
Simplified: no CViViT/T5 (codebook ids are the input, unconditional); the MaskGit and critic
transformers are LayerNorm+Linear; TokenCritic reuses MaskGit with a 1-logit head;
einops pack/unpack/rearrange written as reshape/indexing; dim 8, 10 tokens, 4 steps.
"""
import math
from contextlib import nullcontext

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
    def __init__(self, *, maskgit, critic = None, steps = 4, critic_loss_weight = 1., critic_train_sample_temperature = 1.):
        super().__init__()
        self.maskgit = maskgit
        self.critic = critic
        self.mask_id = maskgit.mask_id
        self.steps = steps
        self.unconditional = True
        self.critic_loss_weight = critic_loss_weight
        self.critic_train_sample_temperature = critic_train_sample_temperature

    def forward(
        self,
        video_codebook_ids,
        video_frame_mask = None,
        cond_drop_prob = None,
        only_train_generator = False,
        only_train_critic = False
    ):
        assert not (only_train_generator  and only_train_critic)

        text_mask = None
        text_embeds = None
        cond_drop_prob = 0

        video_mask = None

        packed_shape = video_codebook_ids.shape
        video_codebook_ids = video_codebook_ids.reshape(packed_shape[0], -1)

        batch, seq, device = *video_codebook_ids.shape, video_codebook_ids.device

        rand_step = torch.randint(0, self.steps, (batch,), device = device)
        mask_token_prob = torch.cos(rand_step * math.pi * 0.5 / self.steps) # cosine schedule was best

        if not exists(video_mask):
            video_mask = torch.ones((batch, seq), device = device).bool()

        mask_token_mask = get_mask_subset_with_prob(video_mask, mask_token_prob)

        masked_input = torch.where(mask_token_mask, self.mask_id, video_codebook_ids)

        masked_input = masked_input.reshape(packed_shape)

        maskgit_forward_context = torch.no_grad if only_train_critic else nullcontext

        with maskgit_forward_context():
            logits = self.maskgit(
                masked_input,
                video_mask = video_mask,
                cond_drop_prob = cond_drop_prob,
                text_mask = text_mask,
                context = text_embeds
            )

        if not only_train_critic:
            loss = F.cross_entropy(
                logits[mask_token_mask],
                video_codebook_ids[mask_token_mask]
            )

        if not exists(self.critic) or only_train_generator:
            return loss

        pred_video_ids = gumbel_sample(logits, temperature = self.critic_train_sample_temperature)

        critic_input = torch.where(mask_token_mask, pred_video_ids, video_codebook_ids)

        critic_input = critic_input.reshape(packed_shape)

        pred_fake_or_real_logits = self.critic(
            critic_input,
            video_mask = video_mask,
            cond_drop_prob = cond_drop_prob,
            text_mask = text_mask,
            context = text_embeds
        )

        critic_labels = (video_codebook_ids != pred_video_ids).float()

        critic_loss = F.binary_cross_entropy_with_logits(
            pred_fake_or_real_logits,
            critic_labels
        )

        if only_train_critic:
            return critic_loss

        return loss + critic_loss * self.critic_loss_weight


def build():
    maskgit = MaskGit(dim = 8, num_tokens = 10, max_seq_len = 16)
    critic = TokenCritic(dim = 8, num_tokens = 10, max_seq_len = 16)
    return Phenaki(maskgit = maskgit, critic = critic)


phenaki = build()
phenaki.compile()


def make():
    torch.manual_seed(0)
    ids = torch.randint(0, 10, (2, 2, 2, 3))
    return build(), [(ids,), (ids, None, None, True), (ids, None, None, False, True)]
