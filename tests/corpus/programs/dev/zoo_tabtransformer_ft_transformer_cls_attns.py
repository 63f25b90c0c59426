"""FT-Transformer (tab-transformer-pytorch): categorical ids offset by a registered buffer, numerical features embedded per column, a CLS token, and attention maps collected in a list then stacked.

Source: lucidrains/tab-transformer-pytorch@23a2959818f59e4db573fb72f9c869cf73aa10c7:tab_transformer_pytorch/ft_transformer.py:1-230
Kept: GEGLU/FeedForward, Attention returning (out, attn), Transformer with
expand/reduce stream functions and the post_softmax_attns list stacked when
return_attn, NumericalEmbedder, FTTransformer's constructor (asserts,
categories_offset buffer via F.pad + cumsum, num_unique_categories /
num_continuous switches) and forward (shape assert, offset, cat, cls tokens,
x[:, 0], to_logits, optional attns).
Simplified: einops `rearrange`/`repeat` are small local stand-ins for the
patterns used; hyper_connections is replaced by its disabled form (one
residual stream: a Residual wrapper that adds the input back to the first
output of a tuple via torch.utils._pytree, identity expand/reduce).
"""
from functools import partial

import torch
from torch import nn, einsum
from torch.nn import Module, ModuleList
import torch.nn.functional as F
from torch.utils._pytree import tree_flatten, tree_unflatten


# einops stand-ins (only the patterns this file uses)

def rearrange(t, pattern, **axes):
    if pattern == 'b n (h d) -> b h n d':
        b, n, hd = t.shape
        h = axes['h']
        return t.reshape(b, n, h, hd // h).permute(0, 2, 1, 3)
    if pattern == 'b h n d -> b n (h d)':
        b, h, n, d = t.shape
        return t.permute(0, 2, 1, 3).reshape(b, n, h * d)
    if pattern == 'b n -> b n 1':
        return t.unsqueeze(-1)
    raise ValueError(pattern)


def repeat(t, pattern, **axes):
    if pattern == '1 1 d -> b 1 d':
        return t.expand(axes['b'], -1, -1)
    raise ValueError(pattern)


# hyper_connections stand-in (num_residual_streams == 1, i.e. disable = True)

class Residual(Module):
    def __init__(self, *args, branch = None, **kwargs):
        super().__init__()
        self.branch = branch

    def forward(self, residuals, *branch_args, **branch_kwargs):
        branch_input = residuals

        def add_residual_fn(branch_out):
            (branch_out, *rest), tree_spec = tree_flatten(branch_out)
            branch_out = branch_out + residuals
            return tree_unflatten((branch_out, *rest), tree_spec)

        branch_output = self.branch(branch_input, *branch_args, **branch_kwargs)
        return add_residual_fn(branch_output)


class HyperConnections:
    @staticmethod
    def get_init_and_expand_reduce_stream_functions(num_streams, disable = False):
        assert disable, 'only the disabled (single stream) form is kept here'
        identity = lambda t: t
        return partial(Residual), identity, identity


# feedforward and attention

class GEGLU(Module):
    def forward(self, x):
        x, gates = x.chunk(2, dim = -1)
        return x * F.gelu(gates)

def FeedForward(dim, mult = 4, dropout = 0.):
    return nn.Sequential(
        nn.LayerNorm(dim),
        nn.Linear(dim, dim * mult * 2),
        GEGLU(),
        nn.Dropout(dropout),
        nn.Linear(dim * mult, dim)
    )

class Attention(Module):
    def __init__(
        self,
        dim,
        heads = 8,
        dim_head = 64,
        dropout = 0.
    ):
        super().__init__()
        inner_dim = dim_head * heads
        self.heads = heads
        self.scale = dim_head ** -0.5

        self.norm = nn.LayerNorm(dim)

        self.to_qkv = nn.Linear(dim, inner_dim * 3, bias = False)
        self.to_out = nn.Linear(inner_dim, dim, bias = False)

        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        h = self.heads

        x = self.norm(x)

        q, k, v = self.to_qkv(x).chunk(3, dim = -1)
        q, k, v = map(lambda t: rearrange(t, 'b n (h d) -> b h n d', h = h), (q, k, v))
        q = q * self.scale

        sim = einsum('b h i d, b h j d -> b h i j', q, k)

        attn = sim.softmax(dim = -1)
        dropped_attn = self.dropout(attn)

        out = einsum('b h i j, b h j d -> b h i d', dropped_attn, v)
        out = rearrange(out, 'b h n d -> b n (h d)', h = h)
        out = self.to_out(out)

        return out, attn

# transformer

class Transformer(Module):
    def __init__(
        self,
        dim,
        depth,
        heads,
        dim_head,
        attn_dropout,
        ff_dropout,
        num_residual_streams = 4
    ):
        super().__init__()

        init_hyper_conn, self.expand_streams, self.reduce_streams = HyperConnections.get_init_and_expand_reduce_stream_functions(num_residual_streams, disable = num_residual_streams == 1)

        self.layers = ModuleList([])

        for _ in range(depth):
            self.layers.append(ModuleList([
                init_hyper_conn(dim = dim, branch = Attention(dim, heads = heads, dim_head = dim_head, dropout = attn_dropout)),
                init_hyper_conn(dim = dim, branch = FeedForward(dim, dropout = ff_dropout)),
            ]))

    def forward(self, x, return_attn = False):
        post_softmax_attns = []

        x = self.expand_streams(x)

        for attn, ff in self.layers:
            x, post_softmax_attn = attn(x)
            post_softmax_attns.append(post_softmax_attn)

            x = ff(x)

        x = self.reduce_streams(x)

        if not return_attn:
            return x

        return x, torch.stack(post_softmax_attns)

# numerical embedder

class NumericalEmbedder(Module):
    def __init__(self, dim, num_numerical_types):
        super().__init__()
        self.weights = nn.Parameter(torch.randn(num_numerical_types, dim))
        self.biases = nn.Parameter(torch.randn(num_numerical_types, dim))

    def forward(self, x):
        x = rearrange(x, 'b n -> b n 1')
        return x * self.weights + self.biases

# main class

class FTTransformer(Module):
    def __init__(
        self,
        *,
        categories,
        num_continuous,
        dim,
        depth,
        heads,
        dim_head = 16,
        dim_out = 1,
        num_special_tokens = 2,
        attn_dropout = 0.,
        ff_dropout = 0.,
        num_residual_streams = 4
    ):
        super().__init__()
        assert all(map(lambda n: n > 0, categories)), 'number of each category must be positive'
        assert len(categories) + num_continuous > 0, 'input shape must not be null'

        # categories related calculations

        self.num_categories = len(categories)
        self.num_unique_categories = sum(categories)

        # create category embeddings table

        self.num_special_tokens = num_special_tokens
        total_tokens = self.num_unique_categories + num_special_tokens

        # for automatically offsetting unique category ids to the correct position in the categories embedding table

        if self.num_unique_categories > 0:
            categories_offset = F.pad(torch.tensor(list(categories)), (1, 0), value = num_special_tokens)
            categories_offset = categories_offset.cumsum(dim = -1)[:-1]
            self.register_buffer('categories_offset', categories_offset)

            # categorical embedding

            self.categorical_embeds = nn.Embedding(total_tokens, dim)

        # continuous

        self.num_continuous = num_continuous

        if self.num_continuous > 0:
            self.numerical_embedder = NumericalEmbedder(dim, self.num_continuous)

        # cls token

        self.cls_token = nn.Parameter(torch.randn(1, 1, dim))

        # transformer

        self.transformer = Transformer(
            dim = dim,
            depth = depth,
            heads = heads,
            dim_head = dim_head,
            attn_dropout = attn_dropout,
            ff_dropout = ff_dropout,
            num_residual_streams = num_residual_streams
        )

        # to logits

        self.to_logits = nn.Sequential(
            nn.LayerNorm(dim),
            nn.ReLU(),
            nn.Linear(dim, dim_out)
        )

    def forward(self, x_categ, x_numer, return_attn = False):
        assert x_categ.shape[-1] == self.num_categories, f'you must pass in {self.num_categories} values for your categories input'

        xs = []
        if self.num_unique_categories > 0:
            x_categ = x_categ + self.categories_offset

            x_categ = self.categorical_embeds(x_categ)

            xs.append(x_categ)

        # add numerically embedded tokens
        if self.num_continuous > 0:
            x_numer = self.numerical_embedder(x_numer)

            xs.append(x_numer)

        # concat categorical and numerical

        x = torch.cat(xs, dim = 1)

        # append cls tokens
        b = x.shape[0]
        cls_tokens = repeat(self.cls_token, '1 1 d -> b 1 d', b = b)
        x = torch.cat((cls_tokens, x), dim = 1)

        # attend

        x, attns = self.transformer(x, return_attn = True)

        # get cls token

        x = x[:, 0]

        # out in the paper is linear(relu(ln(cls)))

        logits = self.to_logits(x)

        if not return_attn:
            return logits

        return logits, attns


def build_model():
    return FTTransformer(
        categories = (3, 4, 2),
        num_continuous = 2,
        dim = 8,
        dim_out = 1,
        depth = 1,
        heads = 2,
        dim_head = 4,
        attn_dropout = 0.1,
        ff_dropout = 0.1,
        num_residual_streams = 1,
    )


model = torch.compile(build_model())


def make():
    torch.manual_seed(0)
    x_categ = torch.tensor([[0, 1, 1], [2, 3, 0]])
    x_numer = torch.randn(2, 2)
    return build_model(), [(x_categ, x_numer), (x_categ, x_numer, True)]
