"""LaTeX-OCR ViT encoder: `h, w = torch.tensor(img.shape[2:])//p` turns the patch grid into tensors, which then size `torch.arange(h)` and the einops repeat that builds `pos_emb_ind` for variable-size formula images; the result indexes the position table and is added in place.

Source: lukas-blecher/LaTeX-OCR@f0269de46ed87c6dde917a3b8b95d9e3ced7cd5f:pix2tex/models/vit.py:8-74
Kept: ViTransformerWrapper verbatim (the asserts, max_width/max_height plumbing, cls token,
`x += self.pos_embedding[:, pos_emb_ind]`, dropout, norm).
Simplified: einops: `rearrange(img, 'b c (h p1) (w p2) -> b (h w) (p1 p2 c)')` written as
view/permute/reshape and `repeat(t, 'h -> (h w)', w=w)` as `t.repeat_interleave(w)` (w is
still the tensor from `torch.tensor(img.shape[2:])//p`), `repeat(cls_token, '() n d -> b n d')`
as expand; x_transformers' Encoder replaced by two nn.TransformerEncoderLayer blocks (with a
`dim` attribute for the isinstance/dim plumbing). max 16x32 images, 4x4 patches, dim 16.
"""
import torch
import torch.nn as nn


class Encoder(nn.Module):
    # stands in for x_transformers.Encoder(dim, depth, heads)
    def __init__(self, dim, depth, heads):
        super().__init__()
        self.dim = dim
        self.layers = nn.ModuleList([nn.TransformerEncoderLayer(dim, heads, dim * 2, dropout=0.0, batch_first=True, norm_first=True) for _ in range(depth)])

    def forward(self, x, **kwargs):
        for layer in self.layers:
            x = layer(x)
        return x


class ViTransformerWrapper(nn.Module):
    def __init__(
        self,
        *,
        max_width,
        max_height,
        patch_size,
        attn_layers,
        channels=1,
        num_classes=None,
        dropout=0.,
        emb_dropout=0.
    ):
        super().__init__()
        assert isinstance(attn_layers, Encoder), 'attention layers must be an Encoder'
        assert max_width % patch_size == 0 and max_height % patch_size == 0, 'image dimensions must be divisible by the patch size'
        dim = attn_layers.dim
        num_patches = (max_width // patch_size)*(max_height // patch_size)
        patch_dim = channels * patch_size ** 2

        self.patch_size = patch_size
        self.max_width = max_width
        self.max_height = max_height

        self.pos_embedding = nn.Parameter(torch.randn(1, num_patches + 1, dim))
        self.patch_to_embedding = nn.Linear(patch_dim, dim)
        self.cls_token = nn.Parameter(torch.randn(1, 1, dim))
        self.dropout = nn.Dropout(emb_dropout)

        self.attn_layers = attn_layers
        self.norm = nn.LayerNorm(dim)

    def forward(self, img, **kwargs):
        p = self.patch_size

        b_, c_, H_, W_ = img.shape
        x = img.view(b_, c_, H_ // p, p, W_ // p, p).permute(0, 2, 4, 3, 5, 1).reshape(b_, (H_ // p) * (W_ // p), p * p * c_)
        x = self.patch_to_embedding(x)
        b, n, _ = x.shape

        cls_tokens = self.cls_token.expand(b, -1, -1)
        x = torch.cat((cls_tokens, x), dim=1)
        h, w = torch.tensor(img.shape[2:])//p
        pos_emb_ind = (torch.arange(h)*(self.max_width//p-w)).repeat_interleave(w)+torch.arange(h*w)
        pos_emb_ind = torch.cat((torch.zeros(1), pos_emb_ind+1), dim=0).long()
        x += self.pos_embedding[:, pos_emb_ind]
        x = self.dropout(x)

        x = self.attn_layers(x, **kwargs)
        x = self.norm(x)

        return x


def get_encoder(args):
    return ViTransformerWrapper(
        max_width=args.max_width,
        max_height=args.max_height,
        channels=args.channels,
        patch_size=args.patch_size,
        emb_dropout=args.get('emb_dropout', 0),
        attn_layers=Encoder(
            dim=args.dim,
            depth=args.encoder_depth,
            heads=args.heads,
        )
    )


class Args(dict):
    __getattr__ = dict.__getitem__


ARGS = Args(max_width=32, max_height=16, channels=1, patch_size=4, dim=16, encoder_depth=2, heads=2)

encoder = torch.compile(get_encoder(ARGS).eval())


def make():
    torch.manual_seed(0)
    return get_encoder(ARGS).eval(), [(torch.rand(2, 1, 16, 32),), (torch.rand(1, 1, 8, 20),)]
