"""muse-maskgit-pytorch's MaskGit.generate: each step reads `int((rand_mask_prob * seq_len).item())` from a noise schedule evaluated on a `torch.linspace` timestep, then re-masks the lowest-confidence tokens.

Source: lucidrains/muse-maskgit-pytorch@8211513a4024479bca8cb90b8b595f1900838ec2:muse_maskgit_pytorch/muse_maskgit_pytorch.py (exists, default, eval_decorator, Transformer.forward_with_cond_scale/forward, TokenCritic, uniform, prob_mask_like, gumbel_sample, top_k, cosine_schedule, MaskGit.__init__/generate)
Kept: the eval_decorator + no_grad generate, demask_fn / token_critic_fn
selection, the timestep loop with its noise schedule, topk re-masking,
self-conditioning embed, temperature annealing, critic or softmax scores and
the can_remask_prev_masked branch; the transformer's context mask and
classifier-free guidance.
Simplified: no VAE, conditioning images, negative prompts or tqdm; T5
encode_text is a fixed embedding table looked up by text length; the
transformer blocks are one feed-forward layer; 2x2 token maps, 5 codes.
"""
import math
from functools import partial

import torch
import torch.nn.functional as F
from torch import nn


def exists(val):
    return val is not None


def default(val, d):
    return val if exists(val) else d


def eval_decorator(fn):
    def inner(model, *args, **kwargs):
        was_training = model.training
        model.eval()
        out = fn(model, *args, **kwargs)
        model.train(was_training)
        return out
    return inner


_TEXT_TABLE = torch.linspace(-1, 1, 4 * 3 * 6).reshape(4, 3, 6)


def toy_encode_text(texts, table = _TEXT_TABLE):
    # Stand-in for t5_encode_text: (batch, tokens, dim) embeddings, zero rows mean padding.
    return torch.stack([table[len(text) % table.shape[0]] for text in texts])


def uniform(shape, min = 0, max = 1, device = None):
    return torch.zeros(shape, device = device).float().uniform_(0, 1)


def prob_mask_like(shape, prob, device = None):
    if prob == 1:
        return torch.ones(shape, device = device, dtype = torch.bool)
    elif prob == 0:
        return torch.zeros(shape, device = device, dtype = torch.bool)
    else:
        return uniform(shape, device = device) < prob


def log(t, eps = 1e-20):
    return torch.log(t.clamp(min = eps))


def gumbel_noise(t):
    noise = torch.zeros_like(t).uniform_(0, 1)
    return -log(-log(noise))


def gumbel_sample(t, temperature = 1., dim = -1):
    return ((t / max(temperature, 1e-10)) + gumbel_noise(t)).argmax(dim = dim)


def top_k(logits, thres = 0.9):
    k = math.ceil((1 - thres) * logits.shape[-1])
    val, ind = logits.topk(k, dim = -1)
    probs = torch.full_like(logits, float('-inf'))
    probs.scatter_(2, ind, val)
    return probs


def cosine_schedule(t):
    return torch.cos(t * math.pi * 0.5)


class Transformer(nn.Module):
    def __init__(self, *, num_tokens, dim, seq_len, dim_out = None, self_cond = False, add_mask_id = False, text_embed_dim = 6):
        super().__init__()
        self.mask_id = num_tokens if add_mask_id else None

        self.num_tokens = num_tokens
        self.token_emb = nn.Embedding(num_tokens + int(add_mask_id), dim)
        self.pos_emb = nn.Embedding(seq_len, dim)
        self.seq_len = seq_len

        self.transformer_blocks = nn.Sequential(nn.LayerNorm(dim), nn.Linear(dim, dim), nn.GELU())

        self.dim_out = default(dim_out, num_tokens)
        self.to_logits = nn.Linear(dim, self.dim_out, bias = False)

        self.encode_text = toy_encode_text
        self.text_embed_proj = nn.Linear(text_embed_dim, dim, bias = False) if text_embed_dim != dim else nn.Identity()

        self.self_cond = self_cond
        self.self_cond_to_init_embed = nn.Linear(dim, dim)

    def forward_with_cond_scale(self, *args, cond_scale = 3., return_embed = False, **kwargs):
        if cond_scale == 1:
            return self.forward(*args, return_embed = return_embed, cond_drop_prob = 0., **kwargs)

        logits, embed = self.forward(*args, return_embed = True, cond_drop_prob = 0., **kwargs)

        null_logits = self.forward(*args, cond_drop_prob = 1., **kwargs)

        scaled_logits = null_logits + (logits - null_logits) * cond_scale

        if return_embed:
            return scaled_logits, embed

        return scaled_logits

    def forward(self, x, return_embed = False, self_cond_embed = None, cond_drop_prob = 0.,
                conditioning_token_ids = None, text_embeds = None):
        device, b, n = x.device, *x.shape
        assert n <= self.seq_len

        context = self.text_embed_proj(text_embeds)

        context_mask = (text_embeds != 0).any(dim = -1)

        # classifier free guidance

        if self.training and cond_drop_prob > 0.:
            mask = prob_mask_like((b, 1), 1. - cond_drop_prob, device)
            context_mask = context_mask & mask

        x = self.token_emb(x)
        x = x + self.pos_emb(torch.arange(n, device = device))

        if self.self_cond:
            if not exists(self_cond_embed):
                self_cond_embed = torch.zeros_like(x)
            x = x + self.self_cond_to_init_embed(self_cond_embed)

        pooled = (context * context_mask[..., None]).sum(dim = 1, keepdim = True) / context_mask.sum(dim = 1).clamp(min = 1)[:, None, None]
        embed = self.transformer_blocks(x + pooled)

        logits = self.to_logits(embed)

        if return_embed:
            return logits, embed

        return logits


class MaskGitTransformer(Transformer):
    def __init__(self, *args, **kwargs):
        assert 'add_mask_id' not in kwargs
        super().__init__(*args, add_mask_id = True, **kwargs)


class TokenCritic(Transformer):
    def __init__(self, *args, **kwargs):
        assert 'dim_out' not in kwargs
        super().__init__(*args, dim_out = 1, **kwargs)


class MaskGit(nn.Module):
    def __init__(self, image_size, transformer, noise_schedule = cosine_schedule, token_critic = None,
                 cond_drop_prob = 0.5, self_cond_prob = 0.9, no_mask_token_prob = 0.):
        super().__init__()
        self.vae = None
        self.image_size = image_size
        self.resize_image_for_cond_image = False
        self.cond_drop_prob = cond_drop_prob

        self.transformer = transformer
        self.self_cond = transformer.self_cond

        self.mask_id = transformer.mask_id
        self.noise_schedule = noise_schedule

        self.token_critic = token_critic
        self.self_cond_prob = self_cond_prob
        self.no_mask_token_prob = no_mask_token_prob

    @torch.no_grad()
    @eval_decorator
    def generate(
        self,
        texts,
        fmap_size = None,
        temperature = 1.,
        topk_filter_thres = 0.9,
        can_remask_prev_masked = False,
        force_not_use_token_critic = False,
        timesteps = 18,  # ideal number of steps is 18 in maskgit paper
        cond_scale = 3,
    ):
        fmap_size = default(fmap_size, self.image_size // 8)

        # begin with all image token ids masked

        device = next(self.parameters()).device

        seq_len = fmap_size ** 2

        batch_size = len(texts)

        shape = (batch_size, seq_len)

        ids = torch.full(shape, self.mask_id, dtype = torch.long, device = device)
        scores = torch.zeros(shape, dtype = torch.float32, device = device)

        starting_temperature = temperature

        cond_ids = None

        text_embeds = self.transformer.encode_text(texts)

        demask_fn = self.transformer.forward_with_cond_scale

        # whether to use token critic for scores

        use_token_critic = exists(self.token_critic) and not force_not_use_token_critic

        if use_token_critic:
            token_critic_fn = self.token_critic.forward_with_cond_scale

        self_cond_embed = None

        for timestep, steps_until_x0 in zip(torch.linspace(0, 1, timesteps, device = device), reversed(range(timesteps))):

            rand_mask_prob = self.noise_schedule(timestep)
            num_token_masked = max(int((rand_mask_prob * seq_len).item()), 1)

            masked_indices = scores.topk(num_token_masked, dim = -1).indices

            ids = ids.scatter(1, masked_indices, self.mask_id)

            logits, embed = demask_fn(
                ids,
                text_embeds = text_embeds,
                self_cond_embed = self_cond_embed,
                conditioning_token_ids = cond_ids,
                cond_scale = cond_scale,
                return_embed = True
            )

            self_cond_embed = embed if self.self_cond else None

            filtered_logits = top_k(logits, topk_filter_thres)

            temperature = starting_temperature * (steps_until_x0 / timesteps) # temperature is annealed

            pred_ids = gumbel_sample(filtered_logits, temperature = temperature, dim = -1)

            is_mask = ids == self.mask_id

            ids = torch.where(
                is_mask,
                pred_ids,
                ids
            )

            if use_token_critic:
                scores = token_critic_fn(
                    ids,
                    text_embeds = text_embeds,
                    conditioning_token_ids = cond_ids,
                    cond_scale = cond_scale
                )

                scores = scores.squeeze(-1)

            else:
                probs_without_temperature = logits.softmax(dim = -1)

                scores = 1 - probs_without_temperature.gather(2, pred_ids[..., None])
                scores = scores.squeeze(-1)

                if not can_remask_prev_masked:
                    scores = scores.masked_fill(~is_mask, -1e5)
                else:
                    assert self.no_mask_token_prob > 0., 'without training with some of the non-masked tokens forced to predict, not sure if the logits will be meaningful for these token'

        # get ids

        ids = ids.reshape(batch_size, fmap_size, fmap_size)

        if not exists(self.vae):
            return ids

        return self.vae.decode_from_ids(ids)


def build_maskgit():
    transformer = MaskGitTransformer(num_tokens = 5, dim = 8, seq_len = 4, self_cond = True)
    critic = TokenCritic(num_tokens = 5, dim = 8, seq_len = 4)
    return MaskGit(image_size = 16, transformer = transformer, token_critic = critic)


maskgit = build_maskgit()
generate = torch.compile(maskgit.generate)


def make():
    torch.manual_seed(0)
    texts = ['a red square', 'two dots']
    return build_maskgit().generate, [
        (texts, 2, 1., 0.5, False, True, 3),
        (texts, 2, 1., 0.5, False, False, 3, 1),
    ]
