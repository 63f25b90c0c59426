"""WhisperSpeech text-to-semantic decoding step: generate_next (compiled with fullgraph=True,
mode="reduce-overhead") runs the model, masks logits and samples with temperature T and top_k
passed as Python numbers (the issue: changing T / top_k recompiles).

Source: WhisperSpeech/WhisperSpeech#44 (https://github.com/WhisperSpeech/WhisperSpeech/issues/44);
code from WhisperSpeech/WhisperSpeech (whisperspeech/t2s_up_wds_mlang_enclm.py: optimize /
generate_one / generate_next, and whisperspeech/inference.py: multinomial_sample_one_no_sync /
logits_to_probs / sample).
Kept: generate_one's call of the model with keyword plumbing, `probs[:,-1]`, the
`probs[self.embeddings.embedding.codes:] = -torch.inf` line, inference.sample with the
exponential_-based no-sync multinomial, logits_to_probs with `max(T, 1e-5)` (the version at the
time of the issue, before T was wrapped in a tensor) and the `top_k is not None` topk/pivot/where
branch; optimize() compiling generate_next.
Simplified: the encoder output xenc is an input; the decoder is one embedding + cross-attention
+ linear head; no KV cache, no dtype switching; tiny sizes.
"""
import torch
import torch.nn.functional as F
from torch import nn


def multinomial_sample_one_no_sync(probs_sort):
    q = torch.empty_like(probs_sort).exponential_(1)
    return torch.argmax(probs_sort / q, dim=-1, keepdim=True).to(dtype=torch.int)


def logits_to_probs(logits, T=1.0, top_k=None):
    logits = logits / max(T, 1e-5)

    if top_k is not None:
        v, _ = torch.topk(logits, min(top_k, logits.size(-1)))
        pivot = v.select(-1, -1).unsqueeze(-1)
        logits = torch.where(logits < pivot, -float("Inf"), logits)

    probs = torch.nn.functional.softmax(logits, dim=-1)
    return probs


def sample(logits, T=1.0, top_k=None):
    probs = logits_to_probs(logits, T, top_k)
    idx_next = multinomial_sample_one_no_sync(probs)
    return idx_next


class EmbeddingProjector(nn.Module):
    def __init__(self, codes, width):
        super().__init__()
        self.codes = codes
        self.main = nn.Embedding(codes + 1, width)

    def forward(self, toks):
        return self.main(toks)

    def unembed(self, x):
        return x @ self.main.weight.T


class Embeddings(nn.Module):
    def __init__(self, codes, width, length):
        super().__init__()
        self.embedding = EmbeddingProjector(codes, width)
        self.positional_embedding = nn.Embedding(length, width)

    def embed(self, toks, positions):
        return self.embedding(toks) + self.positional_embedding(positions)


class TSARTransformer(nn.Module):
    def __init__(self, width=16, codes=20, stoks_len=16):
        super().__init__()
        self.width = width
        self.stoks_len = stoks_len
        self.embeddings = Embeddings(codes, width, stoks_len)
        self.q = nn.Linear(width, width)
        self.kv = nn.Linear(width, 2 * width)
        self.ln = nn.LayerNorm(width)

    def forward(self, in_ttoks, out_ttoks, languages, in_stoks, out_stoks=None, in_stoks_positions=None,
                loss=True, xenc=None, xenc_positions=None, cps_emb=None):
        x = self.embeddings.embed(out_stoks, in_stoks_positions)
        if cps_emb is not None:
            x = x + cps_emb
        k, v = self.kv(xenc).chunk(2, dim=-1)
        x = x + F.scaled_dot_product_attention(self.q(x), k, v)
        logits = self.embeddings.embedding.unembed(self.ln(x))
        return logits, None

    def optimize(self, max_batch_size=1, dtype=torch.float32, torch_compile=True):
        if torch_compile:
            self.generate_next = torch.compile(self.generate_next, mode="reduce-overhead", fullgraph=True)

    def generate_one(self, toks, toks_positions, cps_emb, xenc, xenc_positions, T, top_k):
        probs, _ = self(None, None, None, None, toks, in_stoks_positions=toks_positions, loss=None, xenc=xenc, xenc_positions=xenc_positions, cps_emb=cps_emb)
        probs = probs[:,-1]
        probs[self.embeddings.embedding.codes:] = -torch.inf
        return sample(probs, T, top_k)

    def generate_next(self, *args, **kwargs):
        return self.generate_one(*args, **kwargs)


def make():
    torch.manual_seed(0)
    model = TSARTransformer().eval()
    toks = torch.randint(0, 20, (1, 1))
    pos = torch.tensor([3])
    cps_emb = torch.randn(1, 1, 16)
    xenc = torch.randn(1, 6, 16)
    xenc_positions = torch.arange(6)
    return model.generate_next, [
        (toks, pos, cps_emb, xenc, xenc_positions, 0.7, None),
        (toks, pos, cps_emb, xenc, xenc_positions, 0.7, 5),
        (toks, pos, None, xenc, xenc_positions, 1.0, 5),
    ]
