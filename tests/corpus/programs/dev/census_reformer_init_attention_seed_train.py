"""Reformer attention block reseeds dropout with `torch.seed()` every training forward.

Source: huggingface/transformers@v5.23.0:src/transformers/models/reformer/modeling_reformer.py:1495-1560
Census: penguinwu/oss-model-graph-break-corpus explain_results (pt2.10): ReformerModel train,
`modeling_reformer.py:1541 self._init_attention_seed()`; also pytorch/pytorch#101154 (hf_Reformer).
Kept: `_init_attention_seed` (cuda generators check, `torch.seed() % sys.maxsize`, manual_seed), the
`with torch.no_grad(): if self.training:` call site in the reversible layer's forward.
Simplified: the attention is a Linear + dropout; no reversible residual bookkeeping.
"""
import sys

import torch
from torch import nn


class ReformerLayer(nn.Module):
    def __init__(self, hidden_size=8, dropout=0.1):
        super().__init__()
        self.attention = nn.Linear(hidden_size, hidden_size)
        self.dropout = nn.Dropout(dropout)
        self.attention_seed = None

    def _init_attention_seed(self):
        """
        This function sets a new seed for the attention layer to make dropout deterministic for both forward calls: 1
        normal forward call and 1 forward call in backward to recalculate activations.
        """
        # randomize seeds
        # use cuda generator if available
        if len(torch.cuda.default_generators) > 0:
            # GPU
            device_idx = torch.cuda.current_device()
            self.attention_seed = torch.cuda.default_generators[device_idx].seed()
        else:
            # CPU
            self.attention_seed = int(torch.seed() % sys.maxsize)

        torch.manual_seed(self.attention_seed)

    def forward(self, prev_attn_output, hidden_states):
        with torch.no_grad():
            # every forward pass we sample a different seed
            # for dropout and save for forward fn in backward pass
            # to have correct dropout
            if self.training:
                self._init_attention_seed()
            attn_output = self.dropout(self.attention(hidden_states))
        return prev_attn_output + attn_output


def train(model, steps):
    model.train()
    cmodel = torch.compile(model)
    for a, h in steps:
        cmodel(a, h)


def make():
    torch.manual_seed(0)
    a, h = torch.randn(2, 3, 8), torch.randn(2, 3, 8)
    return ReformerLayer(dropout=0.0).train(), [(a, h)]  # p=0: outputs stay deterministic
