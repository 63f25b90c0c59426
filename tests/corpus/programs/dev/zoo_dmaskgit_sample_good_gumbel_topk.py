"""MaskGIT iterative decoding `sample_good`: T refinement steps of Categorical sampling, cosine mask schedule from numpy, `take_along_dim` confidences, Gumbel-noised `mask_by_random_topk` with a sort-based cut-off, torch.where re-masking.

Source: dome272/MaskGIT-pytorch@06541e15fb2863bb5871b701f1eeb469fe4e6f9e:transformer.py:1-170 (VQGANTransformer: gamma_func, create_input_tokens_normal, tokens_to_logits, mask_by_random_topk, sample_good) and dome272/MaskGIT-pytorch@94739e530b316970417ec5d1f9364332dde859da:bidirectional_transformer.py:1-95 (weights_init, Attention, MultiHeadAttention, Encoder, BidirectionalTransformer)
Kept: the sampling methods verbatim (module-level _CONFIDENCE_OF_KNOWN_TOKENS, the
`inputs is None` / hstack-with-mask-tokens branch, sos token concat, per-step
Categorical(logits=...).sample(), `gamma(ratio)` from numpy, mask_len clamping,
Gumbel(0, 1).sample(probs.shape)); the bidirectional transformer with its per-head
Python loop and torch.cat.
Simplified: every hard-coded `"cuda"` device is "cpu"; the VQGAN (checkpoint load,
encode/decode) is not built, since sampling only uses the transformer; the
transformer is built from the args fields (`BidirectionalTransformer(N=args.n_layers,
dim=args.dim, codebook_size=args.num_codebook_vectors + 2)`, the stored
bidirectional_transformer.py being the (N, dim, codebook_size) version); Encoder's
hidden_dim is 4 * dim instead of the 3072 default; 16 image tokens, 30 codes,
dim 16, 1 layer, T=3.
"""
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

_CONFIDENCE_OF_KNOWN_TOKENS = torch.Tensor([torch.inf]).to("cpu")


# ---- bidirectional_transformer.py ----

def weights_init(m):
    classname = m.__class__.__name__
    if "Linear" in classname:
        nn.init.trunc_normal_(m.weight.data, 0.0, 0.02)


class Attention(nn.Module):
    """
    Simple Self-Attention algorithm. Potential for optimization using a non-quadratic attention mechanism in complexity.
    -> Linformer, Reformer etc.
    """
    def __init__(self, dim=768, heads=8):
        super(Attention, self).__init__()
        d = dim // heads
        self.q, self.k, self.v = nn.Linear(dim, d), nn.Linear(dim, d), nn.Linear(dim, d)
        self.norm = d ** 0.5
        self.dropout = nn.Dropout(p=0.1)

    def forward(self, x):
        q, k, v = self.q(x), self.k(x), self.v(x)
        qk = torch.softmax(q @ torch.transpose(k, 1, 2) / self.norm, dim=1)
        qk = self.dropout(qk)
        attn = torch.matmul(qk, v)
        return attn


class MultiHeadAttention(nn.Module):
    """
    Implementation of MultiHeadAttention, splitting it up to multiple Self-Attention layers and concatenating
    the results and subsequently running it through one linear layer of same dimension.
    """
    def __init__(self, dim=768, heads=8):
        super(MultiHeadAttention, self).__init__()
        self.self_attention_heads = nn.ModuleList([Attention(dim, heads) for _ in range(heads)])
        self.projector = nn.Linear(dim, dim)

    def forward(self, x):
        for i, sa_head in enumerate(self.self_attention_heads):
            if i == 0:
                out = sa_head(x)
            else:
                out = torch.cat((out, sa_head(x)), axis=-1)
        out = self.projector(out)
        return out


class Encoder(nn.Module):
    """
    Transformer encoder using MultiHeadAttention and MLP along with skip connections and LayerNorm
    """
    def __init__(self, dim=768, hidden_dim=3072):
        super(Encoder, self).__init__()
        self.MultiHeadAttention = MultiHeadAttention(dim)
        self.LayerNorm1 = nn.LayerNorm(dim)
        self.LayerNorm2 = nn.LayerNorm(dim)
        self.MLP = nn.Sequential(*[
            nn.Linear(dim, hidden_dim),
            nn.GELU(),
            nn.Linear(hidden_dim, dim),
            nn.GELU()
        ])

    def forward(self, x):
        attn = self.MultiHeadAttention(x)
        x = x.add(attn)
        x = self.LayerNorm1(x)
        mlp = self.MLP(x)
        x = x.add(mlp)
        x = self.LayerNorm2(x)
        return x


class BidirectionalTransformer(nn.Module):
    def __init__(self, N=24, dim=768, codebook_size=1024):
        super(BidirectionalTransformer, self).__init__()

        self.tok_emb = nn.Embedding(codebook_size, dim)
        self.pos_emb = nn.Parameter(torch.zeros(1, 512, dim))
        self.EncoderLayers = nn.ModuleList([Encoder(dim, hidden_dim=4 * dim) for _ in range(N)])
        self.Token_Prediction = nn.Linear(in_features=dim, out_features=codebook_size)
        self.apply(weights_init)

    def forward(self, x):
        token_embeddings = self.tok_emb(x)
        t = token_embeddings.shape[1]
        position_embeddings = self.pos_emb[:, :t, :]
        embed = token_embeddings + position_embeddings
        for enc_layer in self.EncoderLayers:
            embed = enc_layer(embed)
        tkn_prd = self.Token_Prediction(embed)
        return tkn_prd


# ---- transformer.py ----

class VQGANTransformer(nn.Module):
    def __init__(self, args):
        super().__init__()
        self.num_image_tokens = args.num_image_tokens
        self.sos_token = args.num_codebook_vectors + 1
        self.mask_token_id = args.num_codebook_vectors
        self.choice_temperature = 4.5

        self.gamma = self.gamma_func("cosine")

        self.transformer = BidirectionalTransformer(N=args.n_layers, dim=args.dim,
                                                    codebook_size=args.num_codebook_vectors + 2)
        print(f"Transformer parameters: {sum([p.numel() for p in self.transformer.parameters()])}")

    def gamma_func(self, mode="cosine"):
        if mode == "linear":
            return lambda r: 1 - r
        elif mode == "cosine":
            return lambda r: np.cos(r * np.pi / 2)
        elif mode == "square":
            return lambda r: 1 - r ** 2
        elif mode == "cubic":
            return lambda r: 1 - r ** 3
        else:
            raise NotImplementedError

    def create_input_tokens_normal(self, num, label=None):
        # Create blank masked tokens
        blank_tokens = torch.ones((num, self.num_image_tokens), device="cpu")
        masked_tokens = self.mask_token_id * blank_tokens
        return masked_tokens.to(torch.int64)

    def tokens_to_logits(self, seq):
        logits = self.transformer(seq)
        return logits

    def mask_by_random_topk(self, mask_len, probs, temperature=1.0):
        confidence = torch.log(probs) + temperature * torch.distributions.gumbel.Gumbel(0, 1).sample(probs.shape).to("cpu")
        sorted_confidence, _ = torch.sort(confidence, dim=-1)
        # Obtains cut off threshold given the mask lengths.
        cut_off = torch.take_along_dim(sorted_confidence, mask_len.to(torch.long), dim=-1)
        # Masks tokens with lower confidence.
        masking = (confidence < cut_off)
        return masking

    @torch.no_grad()
    def sample_good(self, inputs=None, num=1, T=11, mode="cosine"):
        N = self.num_image_tokens
        if inputs is None:
            inputs = self.create_input_tokens_normal(num)
        else:
            inputs = torch.hstack(
                (inputs, torch.zeros((inputs.shape[0], N - inputs.shape[1]), device="cpu", dtype=torch.int).fill_(self.mask_token_id)))

        sos_tokens = torch.ones(inputs.shape[0], 1, dtype=torch.long, device=inputs.device) * self.sos_token
        inputs = torch.cat((sos_tokens, inputs), dim=1)

        unknown_number_in_the_beginning = torch.sum(inputs == self.mask_token_id, dim=-1)
        gamma = self.gamma_func(mode)
        cur_ids = inputs  # [8, 257]
        for t in range(T):
            logits = self.tokens_to_logits(cur_ids)  # call transformer to get predictions [8, 257, 1024]
            sampled_ids = torch.distributions.categorical.Categorical(logits=logits).sample()

            unknown_map = (cur_ids == self.mask_token_id)  # which tokens need to be sampled -> bool [8, 257]
            sampled_ids = torch.where(unknown_map, sampled_ids, cur_ids)  # replace all -1 with their samples and leave the others untouched [8, 257]

            ratio = 1. * (t + 1) / T  # just a percentage e.g. 1 / 12
            mask_ratio = gamma(ratio)

            probs = F.softmax(logits, dim=-1)  # convert logits into probs [8, 257, 1024]
            selected_probs = torch.squeeze(torch.take_along_dim(probs, torch.unsqueeze(sampled_ids, -1), -1), -1)

            selected_probs = torch.where(unknown_map, selected_probs, _CONFIDENCE_OF_KNOWN_TOKENS)  # ignore tokens which are already sampled [8, 257]

            mask_len = torch.unsqueeze(torch.floor(unknown_number_in_the_beginning * mask_ratio), 1)  # floor(256 * 0.99) = 254 --> [254, 254, 254, 254, ....]
            mask_len = torch.maximum(torch.zeros_like(mask_len), torch.minimum(torch.sum(unknown_map, dim=-1, keepdim=True)-1, mask_len))

            # Adds noise for randomness
            masking = self.mask_by_random_topk(mask_len, selected_probs, temperature=self.choice_temperature * (1. - ratio))
            # Masks tokens with lower confidence.
            cur_ids = torch.where(masking, self.mask_token_id, sampled_ids)

        return cur_ids[:, 1:]


class Args:
    num_image_tokens = 16
    num_codebook_vectors = 30
    n_layers = 1
    dim = 16


def build_sampler():
    model = VQGANTransformer(Args()).eval()
    return torch.compile(model.sample_good)


def make():
    torch.manual_seed(0)
    model = VQGANTransformer(Args()).eval()
    half = torch.randint(0, 30, (2, 8))
    return model.sample_good, [(None, 2, 3), (half, 2, 3)]
