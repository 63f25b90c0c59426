"""T5LayerNorm: RMS norm in fp32 with a `self.weight.dtype in [torch.float16, torch.bfloat16]` cast (no break).

Source: huggingface/transformers@v5.23.0:src/transformers/models/t5/modeling_t5.py:50-72
Census: penguinwu/oss-model-graph-break-corpus: T5Model's only listed break is the DynamicCache deepcopy
(`cache_utils.py:942`); its layer norm compiles cleanly.
Kept: T5LayerNorm verbatim inside a T5DenseActDense-style block.
Simplified: one feed-forward block, d_model 8.
"""
import torch
from torch import nn


class T5LayerNorm(nn.Module):
    def __init__(self, hidden_size, eps=1e-6):
        """
        Construct a layernorm module in the T5 style. No bias and no subtraction of mean.
        """
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self.variance_epsilon = eps

    def forward(self, hidden_states):
        variance = hidden_states.to(torch.float32).pow(2).mean(-1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)

        # convert into half-precision if necessary
        if self.weight.dtype in [torch.float16, torch.bfloat16]:
            hidden_states = hidden_states.to(self.weight.dtype)

        return self.weight * hidden_states


class T5LayerFF(nn.Module):
    def __init__(self, d_model=8, d_ff=16):
        super().__init__()
        self.wi = nn.Linear(d_model, d_ff, bias=False)
        self.wo = nn.Linear(d_ff, d_model, bias=False)
        self.layer_norm = T5LayerNorm(d_model)

    def forward(self, hidden_states):
        forwarded_states = self.layer_norm(hidden_states)
        forwarded_states = self.wo(torch.relu(self.wi(forwarded_states)))
        return hidden_states + forwarded_states


layer = torch.compile(T5LayerFF())


def make():
    torch.manual_seed(0)
    return T5LayerFF(), [(torch.randn(2, 3, 8),)]
