"""GM401 bad: Higgs Audio v2's masked layer norms, read inside `masked_scatter(...)` calls that span lines.

Dynamo breaks at each mask read and again where the resumed `masked_scatter` call starts (GB0007).
Source: huggingface/transformers@v5.23.0:src/transformers/models/higgs_audio_v2/modeling_higgs_audio_v2.py:247-260
"""
import torch
from torch import nn


class DualNormLayer(nn.Module):
    def __init__(self, hidden_size: int = 8) -> None:
        super().__init__()
        self.audio_input_layernorm = nn.LayerNorm(hidden_size)
        self.input_layernorm = nn.LayerNorm(hidden_size)

    def forward(self, hidden_states: torch.Tensor, audio_token_mask: torch.BoolTensor) -> torch.Tensor:
        residual = hidden_states
        hidden_states = hidden_states.masked_scatter(
            audio_token_mask.unsqueeze(-1),
            self.audio_input_layernorm(hidden_states[audio_token_mask]).to(hidden_states.device),
        )
        hidden_states = hidden_states.masked_scatter(
            ~audio_token_mask.unsqueeze(-1),
            self.input_layernorm(hidden_states[~audio_token_mask]).to(hidden_states.device),
        )
        return hidden_states + residual


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    mask = torch.tensor([[True, False, False, True, True]])
    return DualNormLayer(), [(torch.randn(1, 5, 8), mask)]


compiled = torch.compile(DualNormLayer())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
