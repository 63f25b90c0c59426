"""diffusers VectorQuantizer.forward: cdist/argmin codebook lookup, legacy loss switch, straight-through, optional remap (no break).

Source: huggingface/diffusers@58eb52c080:src/diffusers/models/autoencoders/vae.py:635-667
Kept: permute/flatten, argmin over cdist, embedding lookup, the legacy vs
non-legacy commitment loss, the straight-through estimator, the remap and
sane_index_shape reshapes, the (z_q, loss, (perplexity, encodings, indices)) tuple.
Simplified: 8 codes of dim 4; remap None.
"""
import torch
from torch import nn


class VectorQuantizer(nn.Module):
    def __init__(self, n_e=8, vq_embed_dim=4, beta=0.25, remap=None, sane_index_shape=True, legacy=True):
        super().__init__()
        self.n_e = n_e
        self.vq_embed_dim = vq_embed_dim
        self.beta = beta
        self.legacy = legacy
        self.embedding = nn.Embedding(self.n_e, self.vq_embed_dim)
        self.embedding.weight.data.uniform_(-1.0 / self.n_e, 1.0 / self.n_e)
        self.remap = remap
        self.sane_index_shape = sane_index_shape

    def forward(self, z):
        z = z.permute(0, 2, 3, 1).contiguous()
        z_flattened = z.view(-1, self.vq_embed_dim)
        min_encoding_indices = torch.argmin(torch.cdist(z_flattened, self.embedding.weight), dim=1)
        z_q = self.embedding(min_encoding_indices).view(z.shape)
        perplexity = None
        min_encodings = None
        if not self.legacy:
            loss = self.beta * torch.mean((z_q.detach() - z) ** 2) + torch.mean((z_q - z.detach()) ** 2)
        else:
            loss = torch.mean((z_q.detach() - z) ** 2) + self.beta * torch.mean((z_q - z.detach()) ** 2)
        z_q = z + (z_q - z).detach()
        z_q = z_q.permute(0, 3, 1, 2).contiguous()
        if self.remap is not None:
            min_encoding_indices = min_encoding_indices.reshape(z.shape[0], -1)
            min_encoding_indices = self.remap_to_used(min_encoding_indices)
            min_encoding_indices = min_encoding_indices.reshape(-1, 1)
        if self.sane_index_shape:
            min_encoding_indices = min_encoding_indices.reshape(z_q.shape[0], z_q.shape[2], z_q.shape[3])
        return z_q, loss, (perplexity, min_encodings, min_encoding_indices)


quantize = torch.compile(VectorQuantizer())


def make():
    torch.manual_seed(0)
    return VectorQuantizer(), [(torch.randn(2, 4, 3, 3),)]
