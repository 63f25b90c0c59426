"""taming-transformers' VQModel with a remapped codebook: `VectorQuantizer2.remap_to_used` reads `new[unknown]` through a boolean mask to size the random replacement indices.

Source: CompVis/taming-transformers@3ba01b241669f5ade541ce990f7650a3b8f65318:taming/modules/vqvae/quantize.py:213-329
Also: taming/models/vqgan.py:1-60 (VQModel.__init__/encode/decode/forward, which
imports VectorQuantizer2 as VectorQuantizer).
Kept: VectorQuantizer2 (legacy beta placement, the distance expansion, the
straight-through estimator, remap_to_used with unknown_index "random", the
sane_index_shape reshape, unmap_to_all), VQModel's encode/decode plumbing and
the `info` tuple.
Simplified: `remap` is the array of used codes itself instead of the path of a
.npy file given to np.load (no files in the corpus); einops' rearrange
'b c h w -> b h w c' and back are the equivalent permute calls, and
'n d -> d n' is `.t()`; Encoder/Decoder are single convolutions; no
Lightning loss/optimizer plumbing; 8 codes of dim 2, 4 of them in use.
"""
import numpy as np
import torch
import torch.nn as nn


class VectorQuantizer2(nn.Module):
    """
    Improved version over VectorQuantizer, can be used as a drop-in replacement. Mostly
    avoids costly matrix multiplications and allows for post-hoc remapping of indices.
    """
    # NOTE: due to a bug the beta term was applied to the wrong term. for
    # backwards compatibility we use the buggy version by default, but you can
    # specify legacy=False to fix it.
    def __init__(self, n_e, e_dim, beta, remap=None, unknown_index="random",
                 sane_index_shape=False, legacy=True):
        super().__init__()
        self.n_e = n_e
        self.e_dim = e_dim
        self.beta = beta
        self.legacy = legacy

        self.embedding = nn.Embedding(self.n_e, self.e_dim)
        self.embedding.weight.data.uniform_(-1.0 / self.n_e, 1.0 / self.n_e)

        self.remap = remap
        if self.remap is not None:
            self.register_buffer("used", torch.tensor(np.asarray(self.remap)))
            self.re_embed = self.used.shape[0]
            self.unknown_index = unknown_index # "random" or "extra" or integer
            if self.unknown_index == "extra":
                self.unknown_index = self.re_embed
                self.re_embed = self.re_embed+1
        else:
            self.re_embed = n_e

        self.sane_index_shape = sane_index_shape

    def remap_to_used(self, inds):
        ishape = inds.shape
        assert len(ishape)>1
        inds = inds.reshape(ishape[0],-1)
        used = self.used.to(inds)
        match = (inds[:,:,None]==used[None,None,...]).long()
        new = match.argmax(-1)
        unknown = match.sum(2)<1
        if self.unknown_index == "random":
            new[unknown]=torch.randint(0,self.re_embed,size=new[unknown].shape).to(device=new.device)
        else:
            new[unknown] = self.unknown_index
        return new.reshape(ishape)

    def unmap_to_all(self, inds):
        ishape = inds.shape
        assert len(ishape)>1
        inds = inds.reshape(ishape[0],-1)
        used = self.used.to(inds)
        if self.re_embed > self.used.shape[0]: # extra token
            inds[inds>=self.used.shape[0]] = 0 # simply set to zero
        back=torch.gather(used[None,:][inds.shape[0]*[0],:], 1, inds)
        return back.reshape(ishape)

    def forward(self, z, temp=None, rescale_logits=False, return_logits=False):
        assert temp is None or temp==1.0, "Only for interface compatible with Gumbel"
        assert rescale_logits==False, "Only for interface compatible with Gumbel"
        assert return_logits==False, "Only for interface compatible with Gumbel"
        # reshape z -> (batch, height, width, channel) and flatten
        z = z.permute(0, 2, 3, 1).contiguous()
        z_flattened = z.view(-1, self.e_dim)
        # distances from z to embeddings e_j (z - e)^2 = z^2 + e^2 - 2 e * z

        d = torch.sum(z_flattened ** 2, dim=1, keepdim=True) + \
            torch.sum(self.embedding.weight**2, dim=1) - 2 * \
            torch.einsum('bd,dn->bn', z_flattened, self.embedding.weight.t())

        min_encoding_indices = torch.argmin(d, dim=1)
        z_q = self.embedding(min_encoding_indices).view(z.shape)
        perplexity = None
        min_encodings = None

        # compute loss for embedding
        if not self.legacy:
            loss = self.beta * torch.mean((z_q.detach()-z)**2) + \
                   torch.mean((z_q - z.detach()) ** 2)
        else:
            loss = torch.mean((z_q.detach()-z)**2) + self.beta * \
                   torch.mean((z_q - z.detach()) ** 2)

        # preserve gradients
        z_q = z + (z_q - z).detach()

        # reshape back to match original input shape
        z_q = z_q.permute(0, 3, 1, 2).contiguous()

        if self.remap is not None:
            min_encoding_indices = min_encoding_indices.reshape(z.shape[0],-1) # add batch axis
            min_encoding_indices = self.remap_to_used(min_encoding_indices)
            min_encoding_indices = min_encoding_indices.reshape(-1,1) # flatten

        if self.sane_index_shape:
            min_encoding_indices = min_encoding_indices.reshape(
                z_q.shape[0], z_q.shape[2], z_q.shape[3])

        return z_q, loss, (perplexity, min_encodings, min_encoding_indices)


VectorQuantizer = VectorQuantizer2


class VQModel(nn.Module):
    def __init__(self, ddconfig, n_embed, embed_dim, image_key="image",
                 remap=None, sane_index_shape=False):
        super().__init__()
        self.image_key = image_key
        self.encoder = nn.Conv2d(ddconfig["in_channels"], ddconfig["z_channels"], 3, padding=1)
        self.decoder = nn.Conv2d(ddconfig["z_channels"], ddconfig["out_ch"], 3, padding=1)
        self.quantize = VectorQuantizer(n_embed, embed_dim, beta=0.25,
                                        remap=remap, sane_index_shape=sane_index_shape)
        self.quant_conv = torch.nn.Conv2d(ddconfig["z_channels"], embed_dim, 1)
        self.post_quant_conv = torch.nn.Conv2d(embed_dim, ddconfig["z_channels"], 1)

    def encode(self, x):
        h = self.encoder(x)
        h = self.quant_conv(h)
        quant, emb_loss, info = self.quantize(h)
        return quant, emb_loss, info

    def decode(self, quant):
        quant = self.post_quant_conv(quant)
        dec = self.decoder(quant)
        return dec

    def forward(self, input):
        quant, diff, _ = self.encode(input)
        dec = self.decode(quant)
        return dec, diff


DDCONFIG = {"in_channels": 3, "out_ch": 3, "z_channels": 4}
USED_CODES = np.array([0, 2, 5, 7], dtype=np.int64)


def build_vqgan():
    return VQModel(DDCONFIG, n_embed=8, embed_dim=2, remap=USED_CODES, sane_index_shape=True)


vqgan = torch.compile(build_vqgan())


def make():
    torch.manual_seed(0)
    return build_vqgan(), [(torch.randn(2, 3, 4, 4),), (torch.randn(1, 3, 2, 2),)]
