"""ChatRWKV PIPELINE.sample_logits: top-p cutoff computed through numpy on the CPU path.

Source: BlinkDL/ChatRWKV@18ca52f836:rwkv_pip_package/src/rwkv/utils.py:40-66
Kept: PIPELINE_ARGS, PIPELINE.sample_logits with both device branches
(softmax -> .numpy() -> np.sort/np.cumsum/np.argmax cutoff -> masked zeroing ->
np.random.choice on CPU; torch.sort/cumsum(...).cpu().numpy() on GPU), and the
generate() loop's token_ban / presence-frequency penalties before sampling.
Simplified: the RWKV model is a tiny embedding + linear head standing in for
RWKV.forward(tokens, state); no tokenizer (token ids in, token id out).
"""
import numpy as np
import torch
from torch import nn
from torch.nn import functional as F


class PIPELINE_ARGS():
    def __init__(self, temperature=1.0, top_p=1.0, alpha_frequency=0, alpha_presence=0, token_ban=[], token_stop=[]):
        self.temperature = temperature
        self.top_p = top_p
        self.alpha_frequency = alpha_frequency
        self.alpha_presence = alpha_presence
        self.token_ban = token_ban
        self.token_stop = token_stop


class TinyRWKV(nn.Module):
    def __init__(self, n_vocab=16, n_embd=8):
        super().__init__()
        self.emb = nn.Embedding(n_vocab, n_embd)
        self.head = nn.Linear(n_embd, n_vocab, bias=False)

    def forward(self, tokens, state):
        x = self.emb(tokens[-1])
        if state is not None:
            x = x + state
        return self.head(x), x


class PIPELINE(nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def sample_logits(self, logits, temperature=1.0, top_p=1.0):
        probs = F.softmax(logits.float(), dim=-1)

        if probs.device == torch.device('cpu'):
            probs = probs.numpy()
            sorted_probs = np.sort(probs)[::-1]
            cumulative_probs = np.cumsum(sorted_probs)
            cutoff = float(sorted_probs[np.argmax(cumulative_probs > top_p)])
            probs[probs < cutoff] = 0
            if temperature != 1.0:
                probs = probs.pow(1.0 / temperature)
            probs = probs / np.sum(probs)
            out = np.random.choice(a=len(probs), p=probs)
            return int(out)
        else:
            sorted_probs = torch.sort(probs, descending=True)[0]
            cumulative_probs = torch.cumsum(sorted_probs, dim=-1).cpu().numpy()
            cutoff = float(sorted_probs[np.argmax(cumulative_probs > top_p)])
            probs[probs < cutoff] = 0
            if temperature != 1.0:
                probs = probs.pow(1.0 / temperature)
            out = torch.multinomial(probs, num_samples=1)[0]
            return int(out)

    def forward(self, tokens, state, occurrence, args):
        out, state = self.model.forward(tokens, state)
        out = out.detach()
        for n in args.token_ban:
            out[n] = -float('inf')
        for n in occurrence:
            out[n] -= (args.alpha_presence + occurrence[n] * args.alpha_frequency)
        token = self.sample_logits(out, temperature=args.temperature, top_p=args.top_p)
        return token, state


def build():
    pipeline = PIPELINE(TinyRWKV())
    return torch.compile(pipeline)


def make():
    torch.manual_seed(0)
    pipeline = PIPELINE(TinyRWKV())
    tokens = torch.tensor([3, 5, 7])
    state = torch.randn(8)
    plain = PIPELINE_ARGS()
    nucleus = PIPELINE_ARGS(top_p=0.5, alpha_frequency=0.2, alpha_presence=0.2, token_ban=[0])
    return pipeline, [
        (tokens, None, {}, plain),
        (tokens, state, {5: 2, 7: 1}, nucleus),
    ]
