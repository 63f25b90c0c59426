"""audiolm-pytorch's SemanticTransformerWrapper.generate: the sampling loop stops on `if all_rows_have_eos_id(sample_semantic_ids, self.eos_id): break`, a helper returning `torch.any(...).all()`, after priming ids go through `batch_unique_consecutive`.

Source: lucidrains/audiolm-pytorch@018a37c932553d1b182aa60e31044f7ab7808da8:audiolm_pytorch/audiolm_pytorch.py (helpers eval_decorator, gumbel_sample, top_k, mask_out_after_eos_id, all_rows_have_eos_id, batch_unique_consecutive; SemanticTransformer.forward_with_cond_scale; SemanticTransformerWrapper.__init__/generate)
Kept: the helpers, eval_decorator around a no_grad generate, prime_ids and
unique-consecutive priming, last_logit_indices gathering, top-k + gumbel
sampling, the eos early exit and the final mask_out_after_eos_id.
Simplified: no beartype, wav2vec, text conditioning or tqdm; einops
repeat/rearrange written as expand/view; the transformer is an embedding,
a causal running mean and a logit head biased towards eos; 6 tokens + eos.
"""
import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.utils.rnn import pad_sequence


def exists(val):
    return val is not None


def eval_decorator(fn):
    def inner(model, *args, **kwargs):
        was_training = model.training
        model.eval()
        out = fn(model, *args, **kwargs)
        model.train(was_training)
        return out
    return inner


def log(t, eps = 1e-20):
    return torch.log(t + eps)


def gumbel_noise(t):
    noise = torch.zeros_like(t).uniform_(0, 1)
    return -log(-log(noise))


def gumbel_sample(t, temperature = 1., dim = -1):
    return ((t / temperature) + gumbel_noise(t)).argmax(dim = dim)


def top_k(logits, thres = 0.5):
    num_logits = logits.shape[-1]
    k = max(int((1 - thres) * num_logits), 1)
    val, ind = torch.topk(logits, k)
    probs = torch.full_like(logits, float('-inf'))
    probs.scatter_(1, ind, val)
    return probs


def mask_out_after_eos_id(t, eos_id, mask_value = -1, keep_eos = True):
    eos_mask = (t == eos_id).float()

    if keep_eos:
        eos_mask = F.pad(eos_mask, (1, -1))

    after_eos_mask = eos_mask.cumsum(dim = -1) > 0
    return t.masked_fill(after_eos_mask, mask_value)


def all_rows_have_eos_id(t, eos_id):
    eos_mask = (t == eos_id)
    return torch.any(eos_mask, dim = -1).all()


def batch_unique_consecutive(t, pad_value = 0.):
    unique_arr = [torch.unique_consecutive(el) for el in t.unbind(dim = 0)]
    return pad_sequence(unique_arr, batch_first = True, padding_value = pad_value)


class SemanticTransformer(nn.Module):
    def __init__(self, *, num_semantic_tokens = 6, dim = 8, has_condition = False, eos_bias = 0.):
        super().__init__()
        self.eos_id = num_semantic_tokens
        self.has_condition = has_condition
        self.start_token = nn.Parameter(torch.randn(dim))
        self.semantic_embedding = nn.Embedding(num_semantic_tokens + 1, dim)
        self.to_logits = nn.Linear(dim, num_semantic_tokens + 1)
        with torch.no_grad():
            self.to_logits.bias[self.eos_id] += eos_bias

    def forward(self, *, ids = None, text_embeds = None, self_attn_mask = None, cond_drop_prob = None):
        b = ids.shape[0]
        tokens = self.semantic_embedding(ids.clamp(min = 0))
        start_tokens = self.start_token.view(1, 1, -1).expand(b, 1, -1)
        tokens = torch.cat((start_tokens, tokens), dim = 1)
        steps = torch.arange(1, tokens.shape[1] + 1, device = tokens.device).view(1, -1, 1)
        tokens = tokens.cumsum(dim = 1) / steps
        return self.to_logits(tokens)

    def forward_with_cond_scale(self, *args, cond_scale = 3, **kwargs):
        logits = self.forward(*args, cond_drop_prob = 0., **kwargs)

        if cond_scale == 1 or not self.has_condition:
            return logits

        null_logits = self.forward(*args, cond_drop_prob = 1., **kwargs)
        return null_logits + (logits - null_logits) * cond_scale


class SemanticTransformerWrapper(nn.Module):
    def __init__(
        self,
        *,
        transformer,
        wav2vec = None,
        pad_id = -1,
        unique_consecutive = True,
        mask_prob = 0.15
    ):
        super().__init__()
        self.wav2vec = wav2vec
        self.transformer = transformer

        self.unique_consecutive = unique_consecutive
        self.pad_id = pad_id
        self.eos_id = transformer.eos_id
        self.mask_prob = mask_prob

    @property
    def device(self):
        return next(self.parameters()).device

    @eval_decorator
    @torch.no_grad()
    def generate(
        self,
        *,
        max_length,
        text_embeds = None,
        prime_ids = None,
        batch_size = 1,
        cond_scale = 3,
        filter_thres = 0.9,
        temperature = 1.,
        **kwargs
    ):
        device = self.device

        if exists(prime_ids):
            ids = prime_ids
        else:
            ids = torch.empty((batch_size, 0), dtype = torch.long, device = device)

        if self.unique_consecutive:
            ids = batch_unique_consecutive(ids, pad_value = self.pad_id)

        # start length and get running id output

        batch = ids.shape[0]
        start_length = ids.shape[-1]
        sample_semantic_ids = ids.clone()

        last_logit_indices = (ids != self.pad_id).sum(dim = -1).long()

        # sample from transformer

        for ind in range(start_length, max_length):

            logits = self.transformer.forward_with_cond_scale(
                ids = sample_semantic_ids,
                text_embeds = text_embeds,
                cond_scale = cond_scale,
                **kwargs
            )

            last_logit_indices_expanded = last_logit_indices.view(batch, 1, 1).expand(batch, 1, logits.shape[-1])
            last_logits = logits.gather(1, last_logit_indices_expanded)

            last_logits = last_logits.view(batch, -1)

            filtered_logits = top_k(last_logits, thres = filter_thres)
            sampled = gumbel_sample(filtered_logits, temperature = temperature, dim = -1)

            sampled = sampled.view(batch, 1)
            sample_semantic_ids = torch.cat((sample_semantic_ids, sampled), dim = -1)

            if all_rows_have_eos_id(sample_semantic_ids, self.eos_id):
                break

            last_logit_indices += 1

        sample_semantic_ids = mask_out_after_eos_id(sample_semantic_ids, self.pad_id, keep_eos = False)

        return sample_semantic_ids


def generate_semantic(wrapper, prime_ids, max_length):
    return wrapper.generate(prime_ids = prime_ids, max_length = max_length, filter_thres = 0.5)


compiled_generate = torch.compile(generate_semantic)


def make():
    torch.manual_seed(0)
    eager_eos = SemanticTransformerWrapper(transformer = SemanticTransformer(eos_bias = 6.))
    rarely_eos = SemanticTransformerWrapper(transformer = SemanticTransformer(eos_bias = -6.))
    prime = torch.tensor([[1, 1, 2, 3], [4, 4, 4, 5]])
    return generate_semantic, [(eager_eos, prime, 8), (rarely_eos, prime, 6)]
