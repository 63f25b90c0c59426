"""torchaudio merge_tokens after a CTC emission: `torch.nonzero(...).squeeze().tolist()`, `tokens.tolist()`, a walrus filter and `.mean().item()` per span.

Source: pytorch/audio@0462b79e4c:src/torchaudio/functional/_alignment.py:TokenSpan,merge_tokens
Kept: the TokenSpan dataclass (with __len__), merge_tokens exactly (ndim and
length ValueErrors, torch.diff with prepend/append tensors, nonzero ->
squeeze -> tolist, the list comprehension with `if (token := tokens[start])
!= blank` and `scores[start:end].mean().item()`); the caller's shape of the
alignment tutorial (emission from an acoustic model, log_softmax, per-frame
path and scores, `merge_tokens(aligned_tokens[0], scores[0])`, span lengths).
Simplified: forced_align is a C++ op (torch.ops.torchaudio.forced_align), so
the per-frame path is the greedy argmax of the emission; the acoustic model
is a tiny conv + linear head.
"""
from dataclasses import dataclass
from typing import List

import torch
from torch import Tensor, nn


@dataclass
class TokenSpan:
    """TokenSpan()
    Token with time stamps and score. Returned by :py:func:`merge_tokens`.
    """

    token: int
    """The token"""
    start: int
    """The start time (inclusive) in emission time axis."""
    end: int
    """The end time (exclusive) in emission time axis."""
    score: float
    """The score of the this token."""

    def __len__(self) -> int:
        """Returns the time span"""
        return self.end - self.start


def merge_tokens(tokens: Tensor, scores: Tensor, blank: int = 0) -> List[TokenSpan]:
    if tokens.ndim != 1 or scores.ndim != 1:
        raise ValueError("`tokens` and `scores` must be 1D Tensor.")
    if len(tokens) != len(scores):
        raise ValueError("`tokens` and `scores` must be the same length.")

    diff = torch.diff(
        tokens, prepend=torch.tensor([-1], device=tokens.device), append=torch.tensor([-1], device=tokens.device)
    )
    changes_wo_blank = torch.nonzero((diff != 0)).squeeze().tolist()
    tokens = tokens.tolist()
    spans = [
        TokenSpan(token=token, start=start, end=end, score=scores[start:end].mean().item())
        for start, end in zip(changes_wo_blank[:-1], changes_wo_blank[1:])
        if (token := tokens[start]) != blank
    ]
    return spans


class TinyAcousticModel(nn.Module):
    def __init__(self, num_labels=5):
        super().__init__()
        self.feature = nn.Conv1d(1, 8, kernel_size=40, stride=20)
        self.head = nn.Linear(8, num_labels)

    def forward(self, waveforms):
        x = torch.relu(self.feature(waveforms.unsqueeze(1)))
        return self.head(x.transpose(1, 2)), None


def align(model, waveform, blank=0):
    emission, _ = model(waveform)
    emission = torch.log_softmax(emission, dim=-1)
    # per-frame path and its log-probability (what forced_align returns)
    scores, aligned_tokens = emission.max(dim=-1)
    scores = scores.exp()  # convert back to probability
    token_spans = merge_tokens(aligned_tokens[0], scores[0], blank=blank)
    return token_spans, [len(span) for span in token_spans]


align_fn = torch.compile(align)


def make():
    torch.manual_seed(0)
    model = TinyAcousticModel()
    with torch.no_grad():
        model.head.bias.copy_(torch.tensor([0.5, 0.0, 0.2, 0.0, 0.1]))
    return align, [(model, torch.randn(1, 400)), (model, torch.randn(1, 400), 1)]
