"""NeMo's SpecAugment/SpecCutout: per-utterance masks drawn from a `random.Random` held in `self._rng`, with widths computed from `int(length[idx] * self.time_width)` and a `length[idx]` slice for the "mean" mask value.

Source: NVIDIA/NeMo@0495c5270fed749736a9b6f930a9022ac57eb84e:nemo/collections/asr/parts/submodules/spectr_augment.py:27-172 (SpectrogramAugmentation from nemo/collections/asr/modules/audio_preprocessing.py)
Kept: both modules' constructors (the rng default, adaptive temporal width
validation), the no_grad forwards with their per-utterance loops and
in-place slice assignment, and the SpectrogramAugmentation wrapper that runs
SpecCutout then SpecAugment when their counts are positive.
Simplified: the @typecheck decorator and the NeuralType input/output_types
properties are dropped; 6 frequency bins by 12 frames; the rng is seeded.
"""
import random

import torch
import torch.nn as nn


class SpecAugment(nn.Module):
    """
    Zeroes out(cuts) random continuous horisontal or
    vertical segments of the spectrogram as described in
    SpecAugment (https://arxiv.org/abs/1904.08779).
    """

    def __init__(
        self, freq_masks=0, time_masks=0, freq_width=10, time_width=10, rng=None, mask_value=0.0,
    ):
        super().__init__()

        self._rng = random.Random() if rng is None else rng

        self.freq_masks = freq_masks
        self.time_masks = time_masks

        self.freq_width = freq_width
        self.time_width = time_width

        self.mask_value = mask_value

        if isinstance(time_width, int):
            self.adaptive_temporal_width = False
        else:
            if time_width > 1.0 or time_width < 0.0:
                raise ValueError("If `time_width` is a float value, must be in range [0, 1]")

            self.adaptive_temporal_width = True

    @torch.no_grad()
    def forward(self, input_spec, length):
        sh = input_spec.shape
        for idx in range(sh[0]):
            if self.mask_value == "mean":
                mask_value = input_spec[idx][:, : length[idx]].mean()
            else:
                mask_value = self.mask_value

            for i in range(self.freq_masks):
                x_left = self._rng.randint(0, sh[1] - self.freq_width)

                w = self._rng.randint(0, self.freq_width)

                input_spec[idx, x_left : x_left + w, :] = mask_value

            for i in range(self.time_masks):
                if self.adaptive_temporal_width:
                    time_width = max(1, int(length[idx] * self.time_width))
                else:
                    time_width = self.time_width

                y_left = self._rng.randint(0, max(1, length[idx] - time_width))

                w = self._rng.randint(0, time_width)

                input_spec[idx, :, y_left : y_left + w] = mask_value

        return input_spec


class SpecCutout(nn.Module):
    """
    Zeroes out(cuts) random rectangles in the spectrogram
    as described in (https://arxiv.org/abs/1708.04552).
    """

    def __init__(self, rect_masks=0, rect_time=5, rect_freq=20, rng=None):
        super(SpecCutout, self).__init__()

        self._rng = random.Random() if rng is None else rng

        self.rect_masks = rect_masks
        self.rect_time = rect_time
        self.rect_freq = rect_freq

    @torch.no_grad()
    def forward(self, input_spec):
        sh = input_spec.shape

        for idx in range(sh[0]):
            for i in range(self.rect_masks):
                rect_x = self._rng.randint(0, sh[1] - self.rect_freq)
                rect_y = self._rng.randint(0, sh[2] - self.rect_time)

                w_x = self._rng.randint(0, self.rect_freq)
                w_y = self._rng.randint(0, self.rect_time)

                input_spec[idx, rect_x : rect_x + w_x, rect_y : rect_y + w_y] = 0.0

        return input_spec


class SpectrogramAugmentation(nn.Module):
    """Performs time and freq cuts in one of two ways (SpecCutout and/or SpecAugment)."""

    def __init__(
        self,
        freq_masks=0,
        time_masks=0,
        freq_width=10,
        time_width=10,
        rect_masks=0,
        rect_time=5,
        rect_freq=20,
        rng=None,
        mask_value=0.0,
    ):
        super().__init__()

        if rect_masks > 0:
            self.spec_cutout = SpecCutout(rect_masks=rect_masks, rect_time=rect_time, rect_freq=rect_freq, rng=rng,)
        else:
            self.spec_cutout = lambda input_spec: input_spec
        if freq_masks + time_masks > 0:
            self.spec_augment = SpecAugment(
                freq_masks=freq_masks,
                time_masks=time_masks,
                freq_width=freq_width,
                time_width=time_width,
                rng=rng,
                mask_value=mask_value,
            )
        else:
            self.spec_augment = lambda input_spec, length: input_spec

    def forward(self, input_spec, length):
        augmented_spec = self.spec_cutout(input_spec=input_spec)
        augmented_spec = self.spec_augment(input_spec=augmented_spec, length=length)
        return augmented_spec


class Augmenter(nn.Module):
    """The two augmentation configs an ASR model's cfg.spec_augment typically carries."""

    def __init__(self, rng):
        super().__init__()
        self.adaptive = SpectrogramAugmentation(
            freq_masks=2, time_masks=2, freq_width=2, time_width=0.25, rect_masks=1, rect_time=3, rect_freq=2, rng=rng
        )
        self.mean_fill = SpectrogramAugmentation(
            freq_masks=1, time_masks=1, freq_width=2, time_width=3, rng=rng, mask_value="mean"
        )

    def forward(self, processed_signal, processed_signal_length, mean_fill=False):
        if mean_fill:
            return self.mean_fill(input_spec=processed_signal, length=processed_signal_length)
        return self.adaptive(input_spec=processed_signal, length=processed_signal_length)


def build_augmenter(seed=0):
    return torch.compile(Augmenter(random.Random(seed)))


def make():
    torch.manual_seed(0)
    spec = torch.randn(2, 6, 12)
    length = torch.tensor([12, 8])
    return Augmenter(random.Random(0)), [(spec.clone(), length), (spec.clone(), length, True)]
