"""GM503 bad: wav2vec2's feature encoder makes its input view require grad, for gradient checkpointing.

Source: huggingface/transformers@v5.23.0:src/transformers/models/wav2vec2/modeling_wav2vec2.py:413-423
"""
import torch
from torch import nn


class FeatureEncoder(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv_layers = nn.ModuleList([nn.Conv1d(1, 4, 3, stride=2), nn.Conv1d(4, 4, 3, stride=2)])
        self._requires_grad = True

    def forward(self, input_values: torch.Tensor) -> torch.Tensor:
        hidden_states = input_values[:, None]

        # make sure hidden_states require grad for gradient_checkpointing
        if self._requires_grad and self.training:
            if not torch.compiler.is_compiling():
                hidden_states.requires_grad = True

        for conv_layer in self.conv_layers:
            hidden_states = nn.functional.gelu(conv_layer(hidden_states))
        return hidden_states


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    return FeatureEncoder(), [(torch.randn(2, 32),)]


compiled = torch.compile(FeatureEncoder())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
