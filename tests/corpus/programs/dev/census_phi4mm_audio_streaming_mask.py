"""Phi-4-multimodal audio encoder: `_streaming_mask` draws `np.random.rand() > 0.5` in training and
`adaptive_enc_mask` builds chunk masks with `torch.Tensor(list)`, `.nonzero()` and boolean-mask writes.

Source: huggingface/transformers@v5.23.0:src/transformers/models/phi4_multimodal/modeling_phi4_multimodal.py:881-960
Census: penguinwu/oss-model-graph-break-corpus explain_results (pt2.10): Phi4MultimodalAudioModel eval+train,
`modeling_phi4_multimodal.py:949 adaptive_enc_mask(seq_len, chunk_st...` and `:965 enc_streaming_mask =
self._streaming_mask(...)` (train).
Kept: adaptive_enc_mask verbatim, `_streaming_mask` (numpy chunk starts, the training-only random reversal),
and the forward's call + device move + mask combination.
Simplified: the conformer layers are one Linear; chunk_size 2, left_chunk 1.
"""
import numpy as np
import torch
from torch import nn


def adaptive_enc_mask(x_len, chunk_start_idx, left_window=0, right_window=0):
    """
    The function is very important for Transformer Transducer Streaming mode
    """
    chunk_start_idx = torch.Tensor(chunk_start_idx).long()
    start_pad = torch.nn.functional.pad(
        chunk_start_idx, (1, 0)
    )  # append 0 to the beginning, so it becomes [0, 0, 18, 36, 48]
    end_pad = torch.nn.functional.pad(
        chunk_start_idx, (0, 1), value=x_len
    )  # append x_len to the end, so it becomes [0,18,36,48, x_len]
    seq_range = torch.arange(0, x_len).unsqueeze(-1)
    idx = ((seq_range < end_pad) & (seq_range >= start_pad)).nonzero()[:, 1]
    seq_range_expand = torch.arange(0, x_len).unsqueeze(0).expand(x_len, -1)
    idx_left = idx - left_window
    idx_left[idx_left < 0] = 0
    boundary_left = start_pad[idx_left]
    mask_left = seq_range_expand >= boundary_left.unsqueeze(-1)
    idx_right = idx + right_window
    idx_right[idx_right > len(chunk_start_idx)] = len(chunk_start_idx)
    boundary_right = end_pad[idx_right]
    mask_right = seq_range_expand < boundary_right.unsqueeze(-1)
    return mask_left & mask_right


class Phi4MultimodalAudioConfig:
    chunk_size = 2
    left_chunk = 1
    hidden_size = 4


class Phi4MultimodalAudioModel(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.encoder = nn.Linear(config.hidden_size, config.hidden_size)

    def _streaming_mask(self, seq_len, batch_size, chunk_size, left_chunk):
        # Create mask matrix for streaming
        # S stores start index. if chunksize is 18, s is [0,18,36,....]
        chunk_start_idx = np.arange(0, seq_len, chunk_size)
        # avoid randomness when run evaluation or decoding
        if self.training and np.random.rand() > 0.5:
            # Either first or last chunk is not complete.
            # If only the last one is not complete, EOS is not effective
            chunk_start_idx = seq_len - chunk_start_idx
            chunk_start_idx = chunk_start_idx[::-1]
            chunk_start_idx = chunk_start_idx[:-1]
            chunk_start_idx = np.insert(chunk_start_idx, 0, 0)

        enc_streaming_mask = (
            adaptive_enc_mask(seq_len, chunk_start_idx, left_window=left_chunk)
            .unsqueeze(0)
            .expand([batch_size, -1, -1])
        )
        return enc_streaming_mask

    def forward(self, hidden_states, masks=None):
        batch_size, seq_len = hidden_states.shape[:2]
        enc_streaming_mask = self._streaming_mask(seq_len, batch_size, self.config.chunk_size, self.config.left_chunk)
        enc_streaming_mask = enc_streaming_mask.to(hidden_states.device)
        streaming_mask = enc_streaming_mask
        if streaming_mask is not None and masks is not None:
            hs_mask = masks & streaming_mask
        else:
            hs_mask = streaming_mask
        scores = hs_mask.to(hidden_states.dtype)
        return torch.bmm(scores, self.encoder(hidden_states))


encoder = torch.compile(Phi4MultimodalAudioModel(Phi4MultimodalAudioConfig()))


def make():
    torch.manual_seed(0)
    x = torch.randn(2, 5, 4)
    return Phi4MultimodalAudioModel(Phi4MultimodalAudioConfig()), [(x,), (x, torch.ones(2, 1, 5, dtype=torch.bool))]
