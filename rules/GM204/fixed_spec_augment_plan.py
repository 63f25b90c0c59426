"""GM204 bad: wav2vec2's SpecAugment draws its time mask with NumPy, then turns it into a tensor.

Every draw breaks the graph, and the compiled model does not even repeat eager's draws.
Source: huggingface/transformers@v5.23.0:src/transformers/models/wav2vec2/modeling_wav2vec2.py:105-221,1225-1256
(shortened: no attention mask, no feature-axis mask)
"""
import numpy as np
import torch
from torch import nn


def _compute_mask_indices(shape: tuple[int, int], mask_prob: float, mask_length: int, min_masks: int = 0) -> np.ndarray:
    batch_size, sequence_length = shape
    if mask_length > sequence_length:
        raise ValueError(f"`mask_length` has to be smaller than `sequence_length`, but got {mask_length}")
    epsilon = np.random.rand(1).item()
    num_masked_span = max(int(mask_prob * sequence_length / mask_length + epsilon), min_masks)
    num_masked_span = min(num_masked_span, sequence_length // mask_length)
    spec_aug_mask = np.zeros((batch_size, sequence_length), dtype=bool)
    if num_masked_span == 0:
        return spec_aug_mask
    for row in range(batch_size):
        starts = np.random.choice(np.arange(sequence_length - (mask_length - 1)), num_masked_span, replace=False)
        spans = (starts[:, None] + np.arange(mask_length)[None, :]).reshape(-1)
        spec_aug_mask[row, spans] = True
    return spec_aug_mask


@torch.library.custom_op("graphmend::" + __name__.replace(".", "_").strip("_") + "_compute_mask_indices", mutates_args=())
def _compute_mask_indices_on_host(
    shape: list[int],
    mask_prob: float,
    mask_length: int,
    min_masks: int = 0,
    *,
    device: torch.device | None,
    dtype: torch.dtype,
) -> torch.Tensor:
    """`_compute_mask_indices` as one graph op: Dynamo keeps it whole, and its NumPy draws run at run time."""
    array = _compute_mask_indices(tuple(shape), mask_prob, mask_length, min_masks)
    return torch.tensor(array, device=device, dtype=dtype)


@_compute_mask_indices_on_host.register_fake
def _compute_mask_indices_on_host_fake(shape, mask_prob, mask_length, min_masks=0, *, device, dtype):
    batch_size, sequence_length = shape
    return torch.empty((batch_size, sequence_length), device=device, dtype=dtype)


class SpecAugment(nn.Module):
    def __init__(self, hidden_size: int = 8, mask_time_prob: float = 0.5, mask_time_length: int = 2) -> None:
        super().__init__()
        self.masked_spec_embed = nn.Parameter(torch.rand(hidden_size))
        self.mask_time_prob = mask_time_prob
        self.mask_time_length = mask_time_length

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        batch_size, sequence_length, _ = hidden_states.size()
        if self.mask_time_prob > 0 and self.training:
            mask_time_indices = _compute_mask_indices_on_host(
                (batch_size, sequence_length), mask_prob=self.mask_time_prob, mask_length=self.mask_time_length, min_masks=2,
                device=hidden_states.device,
                dtype=torch.bool
            )
            hidden_states[mask_time_indices] = self.masked_spec_embed.to(hidden_states.dtype)
        return hidden_states * 2


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    return SpecAugment().train(), [(torch.randn(2, 10, 8),), (torch.randn(3, 6, 8),)]


compiled = torch.compile(SpecAugment().train())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
