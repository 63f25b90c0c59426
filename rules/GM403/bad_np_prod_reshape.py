"""GM403 bad: Perceiver-style flattening sized with `np.prod` over a shape (GB0033).

Source: huggingface/transformers@v5.23.0:src/transformers/models/perceiver/modeling_perceiver.py
(`generate_fourier_features`, `PerceiverImagePreprocessor._build_network_inputs`)
Dynamo traces `np.prod(shape)` as a 0-d tensor; a torch size must be an int, so the reshape
converts it and breaks, directly or through the name it is stored in (measured, torch 2.13).
`math.prod` gives the same int, which Dynamo folds.
"""
import numpy as np
import torch
from torch import nn


class Flatten(nn.Module):
    def forward(self, inputs: torch.Tensor) -> torch.Tensor:
        batch_size = inputs.shape[0]
        indices = np.prod(inputs.shape[1:-1])
        flat = torch.reshape(inputs, [batch_size, indices, -1])
        features = flat[:, :, :, None] * 2.0
        return torch.reshape(features, [batch_size, -1, np.prod(features.shape[2:])])


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    return Flatten(), [(torch.randn(2, 3, 4, 5),)]


compiled = torch.compile(Flatten())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
