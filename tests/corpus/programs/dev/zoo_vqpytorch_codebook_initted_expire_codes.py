"""vector-quantize-pytorch Codebook: `if self.initted:` on a bool buffer before k-means init, and dead-code expiry `if not torch.any(expired_codes)` then `.item()` per codebook.

Source: lucidrains/vector-quantize-pytorch@0d7d1aa83334b6f2f8a40306bece75cdaa13d065:vector_quantize_pytorch/vector_quantize_pytorch.py:19-100,152-170,231-283,351-475,544-672,674-800
Kept: Codebook's constructor buffers (initted, cluster_size, embed_avg,
embed), init_embed_ with kmeans/batched_bincount, update_codebook ->
track_cluster_size_and_embed_avg -> ema_inplace, update_ema, expire_codes_
and replace, gumbel_sample and forward's training / eval quantize paths.
Simplified: einops rearrange/repeat/reduce/pack are written as torch reshapes;
no DDP, affine params, vq bridge, codebook transform or topk; 1 codebook of 4
codes, dim 3.
"""
from typing import Callable

import torch
import torch.nn.functional as F
from torch import einsum, is_tensor, nn, tensor, Tensor
from torch.nn import Module


def exists(val):
    return val is not None


def is_empty(t):
    return t.numel() == 0


def default(val, d):
    return val if exists(val) else d


def noop(*args, **kwargs):
    pass


def identity(t):
    return t


def l2norm(t, dim=-1, eps=1e-6):
    return F.normalize(t, p=2, dim=dim, eps=eps)


def cdist(x, y, eps=1e-8):
    x2 = (x ** 2).sum(dim=-1)
    y2 = (y ** 2).sum(dim=-1)
    xy = einsum('b i d, b j d -> b i j', x, y) * -2
    return (x2[:, :, None] + y2[:, None, :] + xy).clamp(min=eps).sqrt()


def ema_inplace(old, new, decay, weight=None):
    # if old.grad is populated, add it to new and set it to None
    if exists(old.grad):
        new.add_(old.grad)
        old.grad = None

    # take care of custom weighting
    weight = default(weight, 1.)

    if is_tensor(weight):
        if weight.ndim == 1:
            weight = weight[None, :]
        assert weight.ndim == 2 and weight.shape == old.shape[:2]

    new = new.to(old)
    old.data.lerp_(new, (1. - decay) * weight)


def uniform_init(*shape):
    t = torch.empty(shape)
    nn.init.kaiming_uniform_(t)
    return t


def gumbel_noise(t):
    noise = torch.zeros_like(t).uniform_(0, 1)
    return -torch.log(-torch.log(noise.clamp(min=1e-20)).clamp(min=1e-20))


def gumbel_sample(logits, temperature=1., stochastic=False, straight_through=False, dim=-1, training=True, topk=None):
    dtype, size = logits.dtype, logits.shape[dim]

    if training and stochastic and temperature > 0:
        sampling_logits = (logits / temperature) + gumbel_noise(logits)
    else:
        sampling_logits = logits

    if exists(topk):
        ind = sampling_logits.topk(topk, dim=dim).indices
    else:
        ind = sampling_logits.argmax(dim=dim)

    one_hot = F.one_hot(ind, size).type(dtype)

    if not straight_through or temperature <= 0. or not training:
        return ind, one_hot

    p1 = (logits / temperature).softmax(dim=dim)
    one_hot = one_hot + p1 - p1.detach()
    return ind, one_hot


def laplace_smoothing(x, n_categories, eps=1e-5, dim=-1):
    denom = x.sum(dim=dim, keepdim=True)
    return (x + eps) / (denom + n_categories * eps)


def sample_vectors(samples, num):
    num_samples, device = samples.shape[0], samples.device
    if num_samples >= num:
        indices = torch.randperm(num_samples, device=device)[:num]
    else:
        indices = torch.randint(0, num_samples, (num,), device=device)
    return samples[indices]


def batched_sample_vectors(samples, num):
    return torch.stack([sample_vectors(sample, num) for sample in samples.unbind(dim=0)], dim=0)


def batched_bincount(x, *, minlength):
    batch, dtype, device = x.shape[0], x.dtype, x.device
    target = torch.zeros(batch, minlength, dtype=dtype, device=device)
    values = torch.ones_like(x)
    target.scatter_add_(-1, x, values)
    return target


def kmeans(samples, num_clusters, num_iters=10, use_cosine_sim=False, sample_fn=batched_sample_vectors, all_reduce_fn=noop):
    num_codebooks, dim, dtype, device = samples.shape[0], samples.shape[-1], samples.dtype, samples.device

    means = sample_fn(samples, num_clusters)

    for _ in range(num_iters):
        if use_cosine_sim:
            dists = samples @ means.transpose(-1, -2)
        else:
            dists = -cdist(samples, means)

        buckets = torch.argmax(dists, dim=-1)
        bins = batched_bincount(buckets, minlength=num_clusters)
        all_reduce_fn(bins)

        zero_mask = bins == 0
        bins_min_clamped = bins.masked_fill(zero_mask, 1)

        new_means = buckets.new_zeros(num_codebooks, num_clusters, dim, dtype=dtype)
        new_means.scatter_add_(1, buckets[..., None].expand(-1, -1, dim), samples)
        new_means = new_means / bins_min_clamped[..., None]
        all_reduce_fn(new_means)

        if use_cosine_sim:
            new_means = l2norm(new_means)

        means = torch.where(zero_mask[..., None], means, new_means)

    return means, bins


class Codebook(Module):
    def __init__(
        self,
        dim,
        codebook_size,
        num_codebooks=1,
        kmeans_init=False,
        kmeans_iters=10,
        decay=0.8,
        eps=1e-5,
        threshold_ema_dead_code=2,
        reset_cluster_size=None,
        learnable_codebook=False,
        gumbel_sample=gumbel_sample,
        sample_codebook_temp=1.,
        ema_update=True,
        manual_ema_update=False,
        use_cosine_sim=False,
    ):
        super().__init__()
        self.transform_input = identity if not use_cosine_sim else l2norm

        self.decay = decay
        self.ema_update = ema_update
        self.manual_ema_update = manual_ema_update

        if kmeans_init:
            embed = torch.zeros(num_codebooks, codebook_size, dim)
        else:
            embed = uniform_init(num_codebooks, codebook_size, dim)

        self.codebook_size = codebook_size
        self.num_codebooks = num_codebooks
        self.kmeans_iters = kmeans_iters
        self.eps = eps

        self.threshold_ema_dead_code = threshold_ema_dead_code
        self.has_dead_code_replacement = threshold_ema_dead_code > 0
        self.reset_cluster_size = default(reset_cluster_size, threshold_ema_dead_code)

        assert callable(gumbel_sample)
        self.gumbel_sample = gumbel_sample
        self.sample_codebook_temp = sample_codebook_temp

        self.sample_fn = batched_sample_vectors
        self.replace_sample_fn = batched_sample_vectors
        self.kmeans_all_reduce_fn = noop
        self.all_reduce_fn = noop

        self.register_buffer('initted', tensor(not kmeans_init))
        self.register_buffer('cluster_size', torch.ones(num_codebooks, codebook_size))
        self.register_buffer('embed_avg', embed.clone())

        self.learnable_codebook = learnable_codebook
        if learnable_codebook:
            self.embed = nn.Parameter(embed)
        else:
            self.register_buffer('embed', embed)

        self.use_cosine_sim = use_cosine_sim

    @torch.jit.ignore
    def init_embed_(self, data, mask=None):
        if self.initted:
            return

        if exists(mask):
            c = data.shape[0]
            data = data[mask].reshape(c, -1, data.shape[-1])

        embed, cluster_size = kmeans(
            data,
            self.codebook_size,
            self.kmeans_iters,
            use_cosine_sim=self.use_cosine_sim,
            sample_fn=self.sample_fn,
            all_reduce_fn=self.kmeans_all_reduce_fn
        )

        embed_sum = embed * cluster_size[..., None]

        self.embed_avg.data.copy_(embed_sum)
        self.cluster_size.data.copy_(cluster_size)
        self.update_ema()
        self.initted.data.copy_(tensor(True))

    def replace(self, batch_samples, batch_mask, seq_mask=None):
        if self.use_cosine_sim:
            batch_samples = l2norm(batch_samples)

        for ind, (samples, mask) in enumerate(zip(batch_samples, batch_mask)):
            if exists(seq_mask):
                samples = samples[seq_mask[ind]]

            if is_empty(samples):
                continue

            sampled = self.replace_sample_fn(samples[None], mask.sum().item())
            sampled = sampled[0]

            sampled = sampled.to(self.embed.data)

            self.embed.data[ind][mask] = sampled
            self.cluster_size.data[ind][mask] = self.reset_cluster_size
            self.embed_avg.data[ind][mask] = sampled * self.reset_cluster_size

    def expire_codes_(self, batch_samples, seq_mask=None):
        if not self.has_dead_code_replacement or not self.training:
            return

        expired_codes = self.cluster_size < self.threshold_ema_dead_code

        if not torch.any(expired_codes):
            return

        batch_samples = batch_samples.reshape(batch_samples.shape[0], -1, batch_samples.shape[-1])
        self.replace(batch_samples, batch_mask=expired_codes, seq_mask=seq_mask)

    def update_ema(self):
        cluster_size = laplace_smoothing(self.cluster_size, self.codebook_size, self.eps) * self.cluster_size.sum(dim=-1, keepdim=True)

        embed_normalized = self.embed_avg / cluster_size[..., None]

        if self.use_cosine_sim:
            embed_normalized = l2norm(embed_normalized)

        self.embed.data.copy_(embed_normalized)

    def track_cluster_size_and_embed_avg(self, flatten, embed_onehot, mask=None, ema_update_weight: Tensor | Callable | None = None):
        if exists(mask):
            embed_onehot = embed_onehot.masked_fill(~mask[..., None], 0.)

        cluster_size = embed_onehot.sum(dim=1)
        self.all_reduce_fn(cluster_size)

        embed_sum = einsum('h n d, h n c -> h c d', flatten, embed_onehot)
        embed_sum = embed_sum.contiguous()
        self.all_reduce_fn(embed_sum)

        if callable(ema_update_weight):
            ema_update_weight = ema_update_weight(embed_sum, cluster_size)

        ema_inplace(self.cluster_size, cluster_size, self.decay, ema_update_weight)
        ema_inplace(self.embed_avg, embed_sum, self.decay, ema_update_weight)

    def update_codebook(self, flatten, embed_onehot, mask=None, ema_update_weight=None, ema_update=None):
        ema_update = default(ema_update, self.ema_update)

        if not ema_update and not self.has_dead_code_replacement:
            return

        self.track_cluster_size_and_embed_avg(flatten, embed_onehot, mask, ema_update_weight)

        if ema_update and not self.manual_ema_update:
            self.update_ema()

        self.expire_codes_(flatten, seq_mask=mask)

    def forward(self, x, sample_codebook_temp=None, mask=None, freeze_codebook=False, ema_update_weight=None, ema_update=None, update_usage=True):
        ema_update = default(ema_update, self.ema_update)

        needs_codebook_dim = x.ndim < 4
        sample_codebook_temp = default(sample_codebook_temp, self.sample_codebook_temp)

        x = x.float()

        if needs_codebook_dim:
            x = x[None]

        dtype = x.dtype
        shape = x.shape
        flatten = x.reshape(shape[0], -1, shape[-1])

        if exists(mask):
            mask = mask.reshape(1, -1).expand(flatten.shape[0], -1)

        self.init_embed_(flatten, mask=mask)

        embed = self.embed if self.learnable_codebook else self.embed.detach()
        embed = embed.to(dtype)

        if self.use_cosine_sim:
            dist = einsum('h n d, h c d -> h n c', flatten, embed)
        else:
            dist = -cdist(flatten, embed)

        # sample or argmax depending on temperature
        embed_ind, embed_onehot = self.gumbel_sample(dist, dim=-1, temperature=sample_codebook_temp, training=self.training)

        embed_ind = embed_ind.reshape(shape[:-1])

        if self.training:
            unpacked_onehot = embed_onehot.reshape(*shape[:-1], -1)
            quantize = einsum('h b n c, h c d -> h b n d', unpacked_onehot, embed)
        else:
            repeated_embed = embed[:, None].expand(-1, embed_ind.shape[1], -1, -1)
            repeated_embed_ind = embed_ind[..., None].expand(-1, -1, -1, embed.shape[-1])
            quantize = repeated_embed.gather(-2, repeated_embed_ind)

        if self.training and update_usage and not freeze_codebook:
            self.update_codebook(flatten, embed_onehot, mask=mask, ema_update_weight=ema_update_weight, ema_update=ema_update)

        if needs_codebook_dim:
            quantize, embed_ind = quantize[0], embed_ind[0]

        dist = dist.reshape(*shape[:-1], -1)
        return quantize, embed_ind, dist


class Tokenizer(nn.Module):
    def __init__(self, dim=3, codebook_size=4, kmeans_init=True):
        super().__init__()
        self.proj_in = nn.Linear(dim, dim)
        self.codebook = Codebook(dim, codebook_size, kmeans_init=kmeans_init, kmeans_iters=2, threshold_ema_dead_code=2)

    def forward(self, x, mask=None):
        x = self.proj_in(x)
        quantize, embed_ind, dist = self.codebook(x, mask=mask)
        return x + (quantize - x).detach(), embed_ind


@torch.compile
def quantize_step(tokenizer, x, mask=None):
    return tokenizer(x, mask)


def make():
    torch.manual_seed(0)
    fresh = Tokenizer()
    ready = Tokenizer(kmeans_init=False)
    x = torch.randn(2, 6, 3)
    mask = torch.tensor([[True] * 6, [True] * 5 + [False]])
    return quantize_step._torchdynamo_orig_callable, [(fresh, x), (ready, x), (ready, x * 3, mask)]
