"""Gemma3 text input path: `Gemma3TextScaledWordEmbedding` multiplies by a 0-d tensor buffer `embed_scale`
(cast to the weight dtype) and `Gemma3RMSNorm` normalises in fp32 with `(1.0 + weight)` (no break: the 0-d
tensor is only used arithmetically).

Source: huggingface/transformers@v5.23.0:src/transformers/models/gemma3/modeling_gemma3.py:105-152
Census: penguinwu/oss-model-graph-break-corpus identify_results (2026-04-19): Gemma3TextModel is full_graph in eval
and train.
Kept: both modules verbatim (the scalar and the buffer copy of embed_scale, `_norm`, the fp32 compute and
`type_as`), composed as the model's embed -> input layernorm.
Simplified: vocab 10, hidden 4; the decoder layers are omitted.
"""
import torch
from torch import nn


class Gemma3TextScaledWordEmbedding(nn.Embedding):
    """
    This module overrides nn.Embeddings' forward by multiplying with embeddings scale.
    """

    def __init__(self, num_embeddings, embedding_dim, padding_idx, embed_scale=1.0):
        super().__init__(num_embeddings, embedding_dim, padding_idx)
        self.scalar_embed_scale = embed_scale
        self.embed_scale = nn.Buffer(torch.tensor(embed_scale), persistent=False)

    def forward(self, input_ids):
        return super().forward(input_ids) * self.embed_scale.to(self.weight.dtype)


class Gemma3RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.zeros(dim))

    def _norm(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)

    def forward(self, x):
        output = self._norm(x.float())
        # Llama does x.to(float16) * w whilst Gemma3 is (x * w).to(float16)
        # See https://github.com/huggingface/transformers/pull/29402
        output = output * (1.0 + self.weight.float())
        return output.type_as(x)


class Gemma3TextModel(nn.Module):
    def __init__(self, vocab_size=10, hidden_size=4, pad_token_id=0):
        super().__init__()
        self.embed_tokens = Gemma3TextScaledWordEmbedding(
            vocab_size, hidden_size, pad_token_id, embed_scale=hidden_size**0.5
        )
        self.norm = Gemma3RMSNorm(hidden_size)

    def forward(self, input_ids):
        return self.norm(self.embed_tokens(input_ids))


model = torch.compile(Gemma3TextModel(), fullgraph=True)


def make():
    torch.manual_seed(0)
    return Gemma3TextModel(), [(torch.tensor([[1, 2, 3, 0]]),)]
