"""H-Net dynamic chunking: boundary tokens are picked with a boolean mask, split per sequence with `num_chunks.tolist()`, padded back, the chunk count is read with `.amax().item()`, and upsampling repeats chunks with `repeat_interleave` by tensor lengths.

Source: lucidrains/h-net-dynamic-chunking@0d1ca77b9f468d95230dbc6c8f8b3e95fb2127c6:h_net_dynamic_chunking/h_net_dynamic_chunking.py:1-290
Also: h_net_dynamic_chunking/h_net.py (HNet.forward: downsample, inner network, upsample_fn).
Kept: Outputs/Intermediates namedtuples, helpers, DynamicSequenceChunker
__init__/forward/upsample with the cache=None path (boundary probabilities
from cosine similarity, nonzero + split(tolist) + pad_sequence,
max_chunks item branch, boundary_mask reads, the needs_grad ratio loss,
the returned `upsample` closure), the outer network calling upsample_fn.
Simplified: einx multiply/where and einops repeat/rearrange are written
with plain torch ops; AssocScan is a sequential gated scan; the inner
network is one Linear layer; the kv-cache path is dropped.
"""
from collections import namedtuple

import torch
from torch import cat, arange, tensor, repeat_interleave
from torch.nn import Module, Linear, Parameter
from torch.nn.functional import cosine_similarity, pad
from torch.nn.utils.rnn import pad_sequence

# constants

Outputs = namedtuple('Outputs', [
    'downsampled',
    'upsample_fn',
    'weighted_aux_ratio_loss'
])

Intermediates = namedtuple('Intermediates', [
    'mask',
    'probs',
    'chunk_lens',
    'boundary_mask',
    'gates',
    'residual',
    'upsampler_output_scale',
    'input_downsampled_tokens',
    'aux_ratio_loss',
    'quantized_downsampled_indices'
], defaults = (None,))

# helper functions

def exists(v):
    return v is not None

def default(v, d):
    return v if exists(v) else d

def straight_through(t, value):
    return t + (value - t).detach()

def frac_gradient(t, frac = 1.):
    if frac == 1:
        return t

    t_grad = t * frac
    return straight_through(t_grad, t)

class AssocScan(Module):
    # h_t = gate_t * h_{t-1} + x_t
    def forward(self, gates, inputs, prev = None):
        out = []
        h = prev
        for i in range(inputs.shape[1]):
            x = inputs[:, i]
            h = x if h is None else gates[:, i, None] * h + x
            out.append(h)
        return torch.stack(out, dim = 1)

# classes

class DynamicSequenceChunker(Module):
    def __init__(
        self,
        dim,
        dim_queries_keys = None,
        boundary_threshold = 0.5,
        target_avg_token_length = 6.,       # N in eq(10)
        ratio_loss_weight = 3e-2,
        handle_residual_proj = False,
        learning_rate_difference = 0.75,
        straight_through_frac_vecs = True,
    ):
        super().__init__()
        dim_queries_keys = default(dim_queries_keys, dim)

        # linear to queries and keys

        self.to_queries_keys = Linear(dim, dim_queries_keys * 2, bias = False)

        # start key token, so first token can be segmented / chunked out

        self.start_key_token = Parameter(torch.randn(dim_queries_keys) * 1e-2)

        # threshold to determine boundary

        assert 0. < boundary_threshold < 1.

        self.boundary_threshold = boundary_threshold

        # smoothing related

        self.smooth_assoc_scan = AssocScan()

        # maybe residual proj

        self.handle_residual_proj = handle_residual_proj

        if handle_residual_proj:
            self.residual_proj = Linear(dim, dim)

        self.learning_rate_difference = learning_rate_difference

        # ratio aux loss related

        self.target_avg_token_length = target_avg_token_length

        self.straight_through_frac_vecs = straight_through_frac_vecs

        self.ratio_loss_weight = ratio_loss_weight

        self.register_buffer('zero', tensor(0.), persistent = False)

    def upsample(
        self,
        downsampled,
        intermediates: Intermediates,
        apply_scale = True,
    ):
        batch, needs_grad, device = downsampled.shape[0], downsampled.requires_grad, downsampled.device

        mask = intermediates.mask
        gates = intermediates.gates
        residual = intermediates.residual

        # smoothing module for improved gradients eq(5)

        has_downsampled = downsampled.shape[1] > 0

        if has_downsampled:
            downsampled = self.smooth_assoc_scan(gates, downsampled)

        # upsample

        upsampled = repeat_interleave(downsampled[mask], intermediates.chunk_lens[mask], dim = 0)
        upsampled = upsampled.reshape(batch, -1, upsampled.shape[-1])

        scale = intermediates.upsampler_output_scale

        if needs_grad and apply_scale and exists(scale):
            upsampled = upsampled * scale[..., None]

        if self.handle_residual_proj:
            upsampled = upsampled + self.residual_proj(residual)

        upsampled = frac_gradient(upsampled, self.learning_rate_difference)

        return upsampled

    def forward(
        self,
        tokens, # float[b n d],
        return_intermediates = False,
        return_only_chunk_lens = False,
    ):
        batch, length, device = *tokens.shape[:2], tokens.device

        residual = tokens

        queries, keys = self.to_queries_keys(tokens).chunk(2, dim = -1)

        keys_to_prepend = self.start_key_token.expand(batch, 1, -1)

        keys_for_sim = cat((keys_to_prepend, keys[:, :-1]), dim = 1)

        # each query looks at the previous key to determine if distance is greater than some threshold for determining a boundary exists (they use 0.5 as threshold)

        cosine_sim  = cosine_similarity(queries, keys_for_sim, dim = -1)

        probs = (1. - cosine_sim) * 0.5 # cosine sim is -1. to 1., this transforms it to 0. to 1.

        boundary_mask = probs > self.boundary_threshold # bool[b n]

        boundary_mask[:, 0] = True # first token must always be boundary

        # compute some lengths, per chunk and number of chunks per batch

        num_chunks = boundary_mask.long().sum(dim = -1)

        boundary_mask_with_end = pad(boundary_mask, (0, 1), value = True)
        sel_indices = boundary_mask_with_end.nonzero()[:, 1]

        sel_indices = pad_sequence(sel_indices.split((num_chunks + 1).tolist()), batch_first=True, padding_value=-1)

        mask = (sel_indices != -1)[:, 1:]

        chunk_lens = sel_indices[:, 1:] - sel_indices[:, :-1]
        chunk_lens.masked_fill_(~mask, 0)

        # early return chunk lens if using a trained module as a tokenizer

        if return_only_chunk_lens:
            return chunk_lens

        # downsampling - they show in their experiments that picking out the boundary tokens works just fine

        max_chunks = num_chunks.amax().item()

        if max_chunks == 0:
            downsampled_tokens = tokens[:, 0:0]
            gates = probs[:, 0:0]

        else:
            boundary_tokens = tokens[boundary_mask] # pick out boundary tokens

            downsampled_tokens = pad_sequence(boundary_tokens.split(num_chunks.tolist()), batch_first=True, padding_value=0.)

            # smoothing module for improved gradients eq(5)

            boundary_probs = pad_sequence(probs[boundary_mask].split(num_chunks.tolist()), batch_first=True, padding_value=0.)

            gates = 1. - boundary_probs

            downsampled_tokens = downsampled_tokens * boundary_probs[..., None]

        # for the upsampler

        confidence = torch.where(boundary_mask, probs, 1. - probs)

        # defaults if not training

        upsampler_output_scale = None
        aux_loss = self.zero
        weighted_aux_loss = self.zero

        needs_grad = tokens.requires_grad

        if needs_grad:
            upsampler_output_scale = straight_through(confidence, 1.)

            N = self.target_avg_token_length

            F = boundary_mask.float()
            G = probs.mean(dim = -1)

            if self.straight_through_frac_vecs:
                F_soft = (probs - self.boundary_threshold).sigmoid()
                F = straight_through(F_soft, F)

            F = F.mean(dim = -1)

            aux_ratio_loss = N / (N - 1) * ((N - 1) * F * G + (1. - F) * (1. - G))

            aux_loss = aux_ratio_loss.mean()
            weighted_aux_loss = aux_loss * self.ratio_loss_weight

        # intermediates

        intermediates = Intermediates(mask, probs, chunk_lens, boundary_mask, gates, residual, upsampler_output_scale, downsampled_tokens, aux_loss)

        # return the upsample function

        def upsample(downsampled, apply_scale = True):

            return self.upsample(downsampled, intermediates, apply_scale = apply_scale)

        # adjust learning rate

        downsampled_tokens = frac_gradient(downsampled_tokens, self.learning_rate_difference ** -1)

        # returning

        outputs = Outputs(downsampled_tokens, upsample, weighted_aux_loss)

        return (outputs, intermediates) if return_intermediates else outputs


class HNet(Module):
    def __init__(self, dim, **chunker_kwargs):
        super().__init__()
        self.down = DynamicSequenceChunker(dim, **chunker_kwargs)
        self.network = Linear(dim, dim)

    def forward(self, tokens):
        downsampled, upsample_fn, aux_loss = self.down(tokens)

        inner_network_output = self.network(downsampled)

        output = upsample_fn(inner_network_output)

        return output, aux_loss


def build_hnet():
    return HNet(8, boundary_threshold = 0.5)


hnet = torch.compile(build_hnet())


def make():
    torch.manual_seed(0)
    model = build_hnet()
    tokens = torch.randn(2, 7, 8)
    trainable_tokens = torch.randn(2, 5, 8, requires_grad=True)
    return model, [(tokens,), (trainable_tokens,)]
