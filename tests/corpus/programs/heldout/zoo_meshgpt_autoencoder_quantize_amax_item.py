"""MeshGPT autoencoder quantize: the vertex table is sized by `int(faces.amax().item() + 1)`, then face embeddings are scatter-averaged onto vertices, quantized, and gathered back per face.

Source: lucidrains/meshgpt-pytorch@2efe22196082df22a0a7027636c2d9ae4d708748:meshgpt_pytorch/meshgpt_pytorch.py:107-111,244-257,787-862
Kept: pad_at_dim, scatter_mean, MeshAutoencoder.quantize (pad vertex id,
masked_fill of padded faces, scatter mean, null-vertex mask, the checkpointable
quantize_wrapper_fn with the checkpoint_quantizer branch, gather back to faces,
pad-id fill of codes), called from a forward that embeds face coordinates.
Simplified: einops rearrange/repeat and einx get_at are written as
reshape/expand/gather; vector_quantize_pytorch's ResidualVQ is a
two-quantizer nearest-code residual quantizer returning
(quantized, codes, commit_loss); no typecheck decorator; the face encoder is a
Linear over discretized coordinates; dim 8.
"""
from functools import partial

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.checkpoint import checkpoint


def exists(v):
    return v is not None


def default(v, d):
    return v if exists(v) else d


def pad_at_dim(t, padding, dim = -1, value = 0):
    ndim = t.ndim
    right_dims = (ndim - dim - 1) if dim >= 0 else (-dim - 1)
    zeros = (0, 0) * right_dims
    return F.pad(t, (*zeros, *padding), value = value)


def scatter_mean(
    tgt,
    indices,
    src = None,
    *,
    dim: int = -1,
    eps: float = 1e-5
):
    num = tgt.scatter_add(dim, indices, src)
    den = torch.zeros_like(tgt).scatter_add(dim, indices, torch.ones_like(src))
    return num / den.clamp(min = eps)


def get_at(src, indices):
    # einx: 'b [n] d, b nf nvf -> b nf nvf d'
    b, nf, nvf = indices.shape
    flat = indices.reshape(b, nf * nvf, 1).expand(-1, -1, src.shape[-1])
    return src.gather(1, flat).reshape(b, nf, nvf, src.shape[-1])


class ResidualVQ(nn.Module):
    def __init__(self, dim, num_quantizers = 2, codebook_size = 16):
        super().__init__()
        self.codebooks = nn.Parameter(torch.randn(num_quantizers, codebook_size, dim))

    def forward(self, x, mask = None, sample_codebook_temp = 1.):
        residual = x
        quantized_out = torch.zeros_like(x)
        all_indices, losses = [], []
        for codebook in self.codebooks:
            dist = torch.cdist(residual, codebook[None].expand(x.shape[0], -1, -1))
            indices = dist.argmin(dim = -1)
            quantized = codebook[indices]
            loss = F.mse_loss(residual, quantized.detach(), reduction = 'none').mean(dim = -1)
            if exists(mask):
                loss = (loss * mask).sum() / mask.sum().clamp(min = 1)
            residual = residual - quantized.detach()
            quantized_out = quantized_out + quantized
            all_indices.append(indices)
            losses.append(loss.mean())
        return quantized_out, torch.stack(all_indices, dim = -1), torch.stack(losses)


class MeshAutoencoder(nn.Module):
    def __init__(self, dim = 8, num_discrete_coors = 16, num_vertices_per_face = 3, dim_codebook = 4,
                 num_quantizers = 2, codebook_size = 16, pad_id = -1, checkpoint_quantizer = False):
        super().__init__()
        self.num_vertices_per_face = num_vertices_per_face
        self.num_discrete_coors = num_discrete_coors
        self.num_quantizers = num_quantizers
        self.pad_id = pad_id
        self.checkpoint_quantizer = checkpoint_quantizer
        self.coor_embed = nn.Embedding(num_discrete_coors, dim)
        self.init_proj = nn.Linear(dim * 3 * num_vertices_per_face, dim)
        self.project_dim_codebook = nn.Linear(dim, dim_codebook * num_vertices_per_face)
        self.quantizer = ResidualVQ(dim = dim_codebook, num_quantizers = num_quantizers, codebook_size = codebook_size)

    def encode(self, *, vertices, faces, face_mask):
        batch, num_faces = faces.shape[:2]
        face_without_pad = faces.masked_fill(~face_mask[..., None], 0)
        faces_vertices = vertices.gather(1, face_without_pad.reshape(batch, -1, 1).expand(-1, -1, 3))
        discrete = ((faces_vertices + 1) / 2 * (self.num_discrete_coors - 1)).round().long().clamp(0, self.num_discrete_coors - 1)
        face_embed = self.coor_embed(discrete).reshape(batch, num_faces, -1)
        return self.init_proj(face_embed)

    def quantize(
        self,
        *,
        faces,
        face_mask,
        face_embed,
        pad_id = None,
        rvq_sample_codebook_temp = 1.
    ):
        pad_id = default(pad_id, self.pad_id)
        batch, device = faces.shape[0], faces.device

        max_vertex_index = faces.amax()
        num_vertices = int(max_vertex_index.item() + 1)

        face_embed = self.project_dim_codebook(face_embed)
        face_embed = face_embed.reshape(*face_embed.shape[:2], self.num_vertices_per_face, -1)

        vertex_dim = face_embed.shape[-1]
        vertices = torch.zeros((batch, num_vertices, vertex_dim), device = device)

        # create pad vertex, due to variable lengthed faces

        pad_vertex_id = num_vertices
        vertices = pad_at_dim(vertices, (0, 1), dim = -2, value = 0.)

        faces = faces.masked_fill(~face_mask[..., None], pad_vertex_id)

        # prepare for scatter mean

        faces_with_dim = faces.reshape(batch, -1, 1).expand(-1, -1, vertex_dim)

        face_embed = face_embed.reshape(batch, -1, vertex_dim)

        # scatter mean

        averaged_vertices = scatter_mean(vertices, faces_with_dim, face_embed, dim = -2)

        # mask out null vertex token

        mask = torch.ones((batch, num_vertices + 1), device = device, dtype = torch.bool)
        mask[:, -1] = False

        # rvq specific kwargs

        quantize_kwargs = dict(mask = mask)

        if isinstance(self.quantizer, ResidualVQ):
            quantize_kwargs.update(sample_codebook_temp = rvq_sample_codebook_temp)

        # a quantize function that makes it memory checkpointable

        def quantize_wrapper_fn(inp):
            unquantized, quantize_kwargs = inp
            return self.quantizer(unquantized, **quantize_kwargs)

        # maybe checkpoint the quantize fn

        if self.checkpoint_quantizer:
            quantize_wrapper_fn = partial(checkpoint, quantize_wrapper_fn, use_reentrant = False)

        # residual VQ

        quantized, codes, commit_loss = quantize_wrapper_fn((averaged_vertices, quantize_kwargs))

        # gather quantized vertexes back to faces for decoding
        # now the faces have quantized vertices

        face_embed_output = get_at(quantized, faces).reshape(batch, faces.shape[1], -1)

        # vertex codes also need to be gathered to be organized by face sequence
        # for autoregressive learning

        codes_output = get_at(codes, faces).reshape(batch, -1, self.num_quantizers)

        # make sure codes being outputted have this padding

        face_mask = face_mask[..., None].expand(-1, -1, self.num_vertices_per_face).reshape(batch, -1, 1)
        codes_output = codes_output.masked_fill(~face_mask, self.pad_id)

        # output quantized, codes, as well as commitment loss

        return face_embed_output, codes_output, commit_loss

    def tokenize(self, vertices, faces, face_edges = None, **kwargs):
        face_mask = (faces != self.pad_id).all(dim = -1)
        encoded = self.encode(vertices = vertices, faces = faces, face_mask = face_mask)
        _, codes, _ = self.quantize(faces = faces, face_mask = face_mask, face_embed = encoded, **kwargs)
        return codes

    def forward(self, vertices, faces, rvq_sample_codebook_temp = 1.):
        face_mask = (faces != self.pad_id).all(dim = -1)
        encoded = self.encode(vertices = vertices, faces = faces, face_mask = face_mask)
        quantized, codes, commit_loss = self.quantize(
            faces = faces,
            face_mask = face_mask,
            face_embed = encoded,
            rvq_sample_codebook_temp = rvq_sample_codebook_temp
        )
        return quantized, codes, commit_loss.sum()


autoencoder = MeshAutoencoder()
opt_autoencoder = torch.compile(autoencoder)


def make():
    torch.manual_seed(0)
    vertices = torch.rand(2, 6, 3) * 2 - 1
    faces = torch.tensor([[[0, 1, 2], [1, 2, 3], [-1, -1, -1]], [[0, 2, 4], [2, 4, 5], [3, 4, 5]]])
    return MeshAutoencoder(), [(vertices, faces), (vertices, faces[:, :2], 0.5)]
