"""AWD-LSTM EmbeddingDropout: an `nn.Embedding` subclass that drops whole word rows with a `weight.data.new(...).bernoulli_()` mask in training and calls `F.embedding` with its own padding/max_norm fields.

Source: salesforce/awd-lstm-lm@9cef62854368727f61ba18856a2212598d9a82a0:embed_regularize.py:1-40
Kept: EmbeddingDropout verbatim (the `padding_idx if padding_idx else -1` rewrite,
the training/eval dropout choice, Variable(mask), the `self.scale` check, the
positional F.embedding call).
Simplified: 20 words of size 4; the `__main__` demo's sizes (batch 2, bptt 10).
"""
import numpy as np

import torch
from torch.autograd import Variable
import torch.nn.functional as F


class EmbeddingDropout(torch.nn.Embedding):

  def __init__(self, num_embeddings, embedding_dim, padding_idx=None, max_norm=None,
               norm_type=2, scale_grad_by_freq=False,
               sparse = False, dropout=0.1, scale = None):
    super(EmbeddingDropout, self).__init__(num_embeddings, embedding_dim, padding_idx,
                            max_norm, norm_type, scale_grad_by_freq, sparse)
    self.dropout=dropout
    self.padding_idx = padding_idx if padding_idx else -1
    assert dropout>=0.0 and dropout<1.0 , "Dropout must be >= 0.0 and < 1.0"
    self.scale = scale

  def forward(self, input):
    if self.training:
      dropout = self.dropout
    else:
      dropout = 0

    if dropout:
      mask = self.weight.data.new(self.weight.size(0), 1)
      mask.bernoulli_(1 - dropout)
      mask = mask.expand_as(self.weight)
      mask = mask / (1 - dropout)
      masked_weight = self.weight * Variable(mask)
    else:
      masked_weight = self.weight
    if self.scale and self.scale != 1:
      masked_weight = masked_weight * scale

    X = F.embedding(input, masked_weight,
                                       self.padding_idx, self.max_norm, self.norm_type,
                                       self.scale_grad_by_freq, self.sparse
    )

    return X


V = 20
h = 4
bptt = 10
batch_size = 2

embed = torch.compile(EmbeddingDropout(V, h))


def make():
  torch.manual_seed(0)
  words = np.random.RandomState(0).randint(low=0, high=V, size=(batch_size, bptt))
  words = torch.LongTensor(words)
  words = Variable(words)
  return EmbeddingDropout(V, h).eval(), [(words,), (words[:, :3],)]
