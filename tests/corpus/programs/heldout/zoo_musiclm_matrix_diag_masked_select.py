"""MuLaN softmax contrastive loss: the numerator comes from `matrix_diag`, which reads the diagonal with `t.masked_select(diag_mask)` and reshapes it per layer.

Source: lucidrains/musiclm-pytorch@4a78b41feab25d0ad0f4a1be8ea46b0aaf83d23a:musiclm_pytorch/musiclm_pytorch.py:65-307
Also: musiclm_pytorch/distributed.py:63-73 (AllGather.is_distributed).
Kept: log, matrix_diag and SoftmaxContrastiveLearning verbatim (2-d latents promoted to one
layer, the is_distributed gather branch, temperature per layer, decoupled contrastive
learning masking, the two-sided denominator).
Simplified: einops rearrange/reduce written as view/sum/mean; AllGather keeps only its
is_distributed flag (never true here); 3 layers, batch 4, dim 6.
"""
import math

import torch
import torch.nn.functional as F
import torch.distributed as dist
from torch import nn, einsum


def log(t, eps = 1e-20):
    return torch.log(t.clamp(min = eps))


def l2norm(t):
    return F.normalize(t, p = 2, dim = -1)


def matrix_diag(t):
    device = t.device
    i, j = t.shape[-2:]
    num_diag_el = min(i, j)
    i_range = torch.arange(i, device = device)
    j_range = torch.arange(j, device = device)
    diag_mask = i_range[:, None] == j_range[None, :]
    diag_el = t.masked_select(diag_mask)
    return diag_el.view(-1, num_diag_el)


class AllGather(nn.Module):
    def __init__(self, dim, *, all_reduce_grads = False):
        super().__init__()
        self.dim = dim
        self.all_reduce_grads = all_reduce_grads
        self.is_distributed = dist.is_initialized() and dist.get_world_size() > 1

    def forward(self, x):
        raise NotImplementedError


class SoftmaxContrastiveLearning(nn.Module):
    def __init__(
        self,
        *,
        layers = 1,
        decoupled_contrastive_learning = False,
        init_temp = 10
    ):
        super().__init__()
        self.temperatures = nn.Parameter(torch.ones(layers, 1, 1) * math.log(init_temp))
        self.decoupled_contrastive_learning = decoupled_contrastive_learning

        self.all_gather = AllGather(dim = 2)

    @property
    def device(self):
        return next(self.parameters()).device

    def forward(self, audio_latents, text_latents):
        if audio_latents.ndim == 2:
            audio_latents = audio_latents.unsqueeze(0)

        if text_latents.ndim == 2:
            text_latents = text_latents.unsqueeze(0)

        batch = audio_latents.shape[1]

        if self.all_gather.is_distributed:
            latents = torch.stack((audio_latents, text_latents))
            latents, _ = self.all_gather(latents)
            audio_latents, text_latents = latents

        sims = einsum('l i d, l j d -> l i j', audio_latents, text_latents)

        sims = sims * self.temperatures.exp()

        cosine_sims_exp = sims.exp()

        numerator = matrix_diag(cosine_sims_exp)

        if self.decoupled_contrastive_learning:
            eye = torch.eye(batch, device = self.device, dtype = torch.bool)
            cosine_sims_exp = cosine_sims_exp.masked_fill(eye, 0.)

        denominator_i = cosine_sims_exp.sum(dim = -1)
        denominator_j = cosine_sims_exp.sum(dim = -2)

        contrastive_loss = -log(numerator) + 0.5 * (log(denominator_i) + log(denominator_j))

        contrastive_loss = contrastive_loss.mean(dim = -1)
        return contrastive_loss.sum()


contrast = torch.compile(SoftmaxContrastiveLearning(layers = 3, decoupled_contrastive_learning = True))


def make():
    torch.manual_seed(0)
    audio = l2norm(torch.randn(3, 4, 6))
    text = l2norm(torch.randn(3, 4, 6))
    loss = SoftmaxContrastiveLearning(layers = 3, decoupled_contrastive_learning = True)
    return loss, [(audio, text), (audio[0], text[0])]
