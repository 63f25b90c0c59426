"""wav2vec2-style Gumbel vector quantizer: projection, group view, hard `F.gumbel_softmax` in fp32.

Source: pytorch/pytorch#127749 (https://github.com/pytorch/pytorch/issues/127749)
Kept: the reporter's GumbelVectorQuantizer (`num_groups`, `num_vars`,
`weight_proj` Linear with normal_/zero_ init through `.data`, a temperature
attribute, `hidden_states.view(batch_size * sequence_length * self.num_groups, -1)`,
`F.gumbel_softmax(hidden_states.float(), tau=self.temperature, hard=True)
.type_as(hidden_states)`), and `torch.compile(vq)` called in a loop on fresh
random inputs. The issue is a silent NaN under inductor on CUDA.
Simplified: CUDA -> CPU; 32 groups x 320 vars over 256 features -> 2 x 4 over
8; batch (4, 400) -> (2, 3); the eager/compiled NaN comparison loop kept in main().
"""
import torch
import torch.nn.functional as F
from torch import nn


class GumbelVectorQuantizer(nn.Module):
    def __init__(self):
        super().__init__()
        self.num_groups = 2
        self.num_vars = 4

        self.weight_proj = nn.Linear(8, self.num_groups * self.num_vars)
        self.temperature = 2

        self.weight_proj.weight.data.normal_(mean=0.0, std=1)
        self.weight_proj.bias.data.zero_()

    def forward(self, hidden_states: torch.Tensor):
        batch_size, sequence_length, hidden_size = hidden_states.shape

        hidden_states = self.weight_proj(hidden_states)
        hidden_states = hidden_states.view(batch_size * sequence_length * self.num_groups, -1)

        codevector_probs = F.gumbel_softmax(hidden_states.float(), tau=self.temperature, hard=True).type_as(hidden_states)
        return codevector_probs


def main():
    vq = GumbelVectorQuantizer()
    vq_compiled = torch.compile(vq)
    for i in range(10):
        x = torch.randn(2, 3, 8)
        out = vq(x)
        out_compiled = vq_compiled(x)
        if out.isnan().any() or out_compiled.isnan().any():
            print(f"{i} - eager: {out.isnan().sum()} NaNs, compiled: {out_compiled.isnan().sum()} NaNs")


def make():
    torch.manual_seed(0)
    vq = GumbelVectorQuantizer()
    return vq, [(torch.randn(2, 3, 8),)]
