"""LaTeX-OCR decoding: `Model.generate` builds BOS tokens with `torch.LongTensor([bos]*len(x))`, then `CustomARWrapper.generate` samples with top-k + multinomial, pads the mask each step, and stops when `(torch.cumsum(out == eos_token, 1)[:, -1] >= 1).all()`.

Source: lukas-blecher/LaTeX-OCR@f0269de46ed87c6dde917a3b8b95d9e3ced7cd5f:pix2tex/models/transformer.py:7-52
Also: pix2tex/models/utils.py:9-37 (Model.forward/generate); top_k from
x_transformers==0.15.0 autoregressive_wrapper.py (the version setup.py pins).
Kept: CustomARWrapper.generate and Model.generate verbatim (no_grad decorators,
was_training save/restore, `self.net.eval()` inside, the set membership test on
filter_logits_fn, kwargs pop of mask); top_k verbatim.
Simplified: x_transformers' TransformerWrapper(Decoder(cross_attend)) is replaced by a
one-layer decoder (token + position embedding, masked causal self-attention, cross
attention to the context, logits); the ViT encoder by a linear patch embedding.
AutoregressiveWrapper.__init__ reduced to storing net, max_seq_len, pad_value.
Vocabulary 12 (so top_k keeps k=1), dim 16, max_seq_len 8, 8x8 images with 4x4 patches.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F


def top_k(logits, thres = 0.9):
    k = int((1 - thres) * logits.shape[-1])
    val, ind = torch.topk(logits, k)
    probs = torch.full_like(logits, float('-inf'))
    probs.scatter_(1, ind, val)
    return probs


def top_p(logits, thres = 0.9):
    sorted_logits, sorted_indices = torch.sort(logits, descending=True)
    cum_probs = torch.cumsum(F.softmax(sorted_logits, dim=-1), dim=-1)

    sorted_indices_to_remove = cum_probs > (1 - thres)
    sorted_indices_to_remove[:, 1:] = sorted_indices_to_remove[:, :-1].clone()
    sorted_indices_to_remove[:, 0] = 0

    sorted_logits[sorted_indices_to_remove] = float('-inf')
    return sorted_logits.scatter(1, sorted_indices, sorted_logits)


class AutoregressiveWrapper(nn.Module):
    def __init__(self, net, ignore_index = -100, pad_value = 0):
        super().__init__()
        self.pad_value = pad_value
        self.ignore_index = ignore_index
        self.net = net
        self.max_seq_len = net.max_seq_len


class CustomARWrapper(AutoregressiveWrapper):
    def __init__(self, *args, **kwargs):
        super(CustomARWrapper, self).__init__(*args, **kwargs)

    @torch.no_grad()
    def generate(self, start_tokens, seq_len=256, eos_token=None, temperature=1., filter_logits_fn=top_k, filter_thres=0.9, **kwargs):
        device = start_tokens.device
        was_training = self.net.training
        num_dims = len(start_tokens.shape)

        if num_dims == 1:
            start_tokens = start_tokens[None, :]

        b, t = start_tokens.shape

        self.net.eval()
        out = start_tokens
        mask = kwargs.pop('mask', None)
        if mask is None:
            mask = torch.full_like(out, True, dtype=torch.bool, device=out.device)

        for _ in range(seq_len):
            x = out[:, -self.max_seq_len:]
            mask = mask[:, -self.max_seq_len:]
            # print('arw:',out.shape)
            logits = self.net(x, mask=mask, **kwargs)[:, -1, :]

            if filter_logits_fn in {top_k, top_p}:
                filtered_logits = filter_logits_fn(logits, thres=filter_thres)
                probs = F.softmax(filtered_logits / temperature, dim=-1)

            sample = torch.multinomial(probs, 1)

            out = torch.cat((out, sample), dim=-1)
            mask = F.pad(mask, (0, 1), value=True)

            if eos_token is not None and (torch.cumsum(out == eos_token, 1)[:, -1] >= 1).all():
                break

        out = out[:, t:]

        if num_dims == 1:
            out = out.squeeze(0)

        self.net.train(was_training)
        return out


class TinyDecoderNet(nn.Module):
    # stands in for TransformerWrapper(attn_layers=Decoder(cross_attend=True))
    def __init__(self, num_tokens, max_seq_len, dim):
        super().__init__()
        self.max_seq_len = max_seq_len
        self.token_emb = nn.Embedding(num_tokens, dim)
        self.pos_emb = nn.Embedding(max_seq_len, dim)
        self.self_attn = nn.MultiheadAttention(dim, 2, batch_first=True)
        self.cross_attn = nn.MultiheadAttention(dim, 2, batch_first=True)
        self.norm = nn.LayerNorm(dim)
        self.to_logits = nn.Linear(dim, num_tokens)

    def forward(self, x, mask=None, context=None):
        n = x.shape[1]
        h = self.token_emb(x) + self.pos_emb(torch.arange(n, device=x.device))
        causal = torch.ones(n, n, dtype=torch.bool, device=x.device).triu(1)
        h = h + self.self_attn(h, h, h, attn_mask=causal, key_padding_mask=~mask, need_weights=False)[0]
        h = h + self.cross_attn(h, context, context, need_weights=False)[0]
        return self.to_logits(self.norm(h))


class PatchEncoder(nn.Module):
    def __init__(self, patch_size, dim, channels=1):
        super().__init__()
        self.patch_size = patch_size
        self.proj = nn.Linear(channels * patch_size ** 2, dim)

    def forward(self, img):
        p = self.patch_size
        b, c, H, W = img.shape
        x = img.view(b, c, H // p, p, W // p, p).permute(0, 2, 4, 3, 5, 1).reshape(b, (H // p) * (W // p), p * p * c)
        return self.proj(x)


class Args:
    bos_token = 1
    eos_token = 2
    pad_token = 0
    max_seq_len = 8
    num_tokens = 12
    dim = 16


class Model(nn.Module):
    def __init__(self, encoder, decoder, args):
        super().__init__()
        self.encoder = encoder
        self.decoder = decoder
        self.args = args

    def forward(self, x: torch.Tensor, tgt_seq: torch.Tensor,  **kwargs):
        encoded = self.encoder(x)
        out = self.decoder(tgt_seq, context=encoded, **kwargs)
        return out

    @torch.no_grad()
    def generate(self, x: torch.Tensor, temperature: float = 0.25):
        return self.decoder.generate((torch.LongTensor([self.args.bos_token]*len(x))[:, None]).to(x.device), self.args.max_seq_len,
                                     eos_token=self.args.eos_token, context=self.encoder(x), temperature=temperature)


def get_model(args):
    encoder = PatchEncoder(4, args.dim)
    decoder = CustomARWrapper(TinyDecoderNet(args.num_tokens, args.max_seq_len, args.dim), pad_value=args.pad_token)
    return Model(encoder, decoder, args)


def build(args):
    model = get_model(args)
    with torch.no_grad():
        # random init makes eos the first pick; a zero eos bias lets decoding run on
        model.decoder.net.to_logits.bias[args.eos_token] = 0.0
    return model.eval()


generate = torch.compile(build(Args()).generate)


def make():
    torch.manual_seed(0)
    model = build(Args())
    torch.manual_seed(1)
    img_early = torch.rand(1, 1, 8, 8)  # decodes to [3, eos]: the eos check stops the loop
    img_long = torch.rand(1, 1, 8, 8)   # runs to max_seq_len
    return model.generate, [(torch.cat([img_early, img_long]),), (img_early, 0.5)]
