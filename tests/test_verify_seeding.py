"""Both verify arms start every call from the same random state, numpy's and ``random``'s included.

transformers' SpecAugment (wav2vec2, HuBERT... in train mode) masks with ``np.random``: seeding torch
alone made the two arms of ``verify hf:wav2vec2 --train`` differ by 6.1 with no eager change at all.
"""

from __future__ import annotations

import random

import pytest

torch = pytest.importorskip("torch")
numpy = pytest.importorskip("numpy")

from graphmend_lint.verify.arm import seed_everything  # noqa: E402


def _draws() -> tuple[float, float, float]:
    return float(torch.rand([])), float(numpy.random.rand()), random.random()


def test_seed_everything_repeats_torch_numpy_and_random_draws() -> None:
    seed_everything(3)
    first = _draws()
    _draws()  # move every generator on
    seed_everything(3)
    assert _draws() == first
