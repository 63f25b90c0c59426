"""torchcrepe postprocess with the weighted_argmax decoder: out-of-range bins are set to -inf, then each frame's logits are masked with slices bounded by 0-d tensors (`logits[batch, :start[batch, time], time]`), cents come from a weighted sum and `dither` adds random noise; harmonicity is gathered at the decoded bins.

Source: maxrmorrison/torchcrepe@0536547d54e036a64367d14760edca3f017c0479:torchcrepe/core.py:469-508,593-606
Also: torchcrepe/decode.py@0726674609822ab9555ee0730cb3d698246d7188:23-52 (weighted_argmax),
torchcrepe/convert.py (bins_to_cents, cents_to_bins, cents_to_frequency,
frequency_to_bins, frequency_to_cents, dither), torchcrepe/threshold.py (At).
Kept: postprocess, harmonicity, weighted_argmax (the hasattr-cached weights on
the function object), the convert helpers and threshold.At verbatim; a predict
step that applies the threshold, as the README shows.
Simplified: scipy.stats.triang.rvs in dither is numpy's triangular sampler
(same parameters); 360 bins kept, 3 frames.
"""
import numpy as np
import torch

CENTS_PER_BIN = 20  # cents
MAX_FMAX = 2006.  # hz
PITCH_BINS = 360
UNVOICED = np.nan


def bins_to_cents(bins):
    """Converts pitch bins to cents"""
    cents = CENTS_PER_BIN * bins + 1997.3794084376191

    # Trade quantization error for noise
    return dither(cents)


def cents_to_bins(cents, quantize_fn=torch.floor):
    """Converts cents to pitch bins"""
    bins = (cents - 1997.3794084376191) / CENTS_PER_BIN
    return quantize_fn(bins).int()


def cents_to_frequency(cents):
    """Converts cents to frequency in Hz"""
    return 10 * 2 ** (cents / 1200)


def frequency_to_bins(frequency, quantize_fn=torch.floor):
    """Convert frequency in Hz to pitch bins"""
    return cents_to_bins(frequency_to_cents(frequency), quantize_fn)


def frequency_to_cents(frequency):
    """Convert frequency in Hz to cents"""
    return 1200 * torch.log2(frequency / 10.)


def dither(cents):
    """Dither the predicted pitch in cents to remove quantization error"""
    noise = np.random.triangular(-CENTS_PER_BIN, 0.0, CENTS_PER_BIN, size=tuple(cents.size()))
    return cents + noise


def weighted_argmax(logits):
    """Sample observations using weighted sum near the argmax"""
    # Find center of analysis window
    bins = logits.argmax(dim=1)

    # Find bounds of analysis window
    start = torch.max(torch.tensor(0), bins - 4)
    end = torch.min(torch.tensor(logits.size(2)), bins + 5)

    # Mask out everything outside of window
    for batch in range(logits.size(0)):
        for time in range(logits.size(2)):
            logits[batch, :start[batch, time], time] = -float('inf')
            logits[batch, end[batch, time]:, time] = -float('inf')

    # Construct weights
    if not hasattr(weighted_argmax, 'weights'):
        weights = bins_to_cents(torch.arange(360))
        weighted_argmax.weights = weights[None, :, None]

    # Ensure devices are the same (no-op if they are)
    weighted_argmax.weights = weighted_argmax.weights.to(logits.device)

    # Convert to probabilities
    with torch.no_grad():
        probs = torch.sigmoid(logits)

    # Apply weights
    cents = (weighted_argmax.weights * probs).sum(dim=1) / probs.sum(dim=1)

    # Convert to frequency in Hz
    return bins, cents_to_frequency(cents)


def harmonicity(probabilities, bins):
    """Computes the harmonicity from the network output and pitch bins"""
    # shape=(batch * time / hop_length, 360)
    probs_stacked = probabilities.transpose(1, 2).reshape(-1, PITCH_BINS)

    # shape=(batch * time / hop_length, 1)
    bins_stacked = bins.reshape(-1, 1).to(torch.int64)

    # Use maximum logit over pitch bins as harmonicity
    harmonicity = probs_stacked.gather(1, bins_stacked)

    # shape=(batch, time / hop_length)
    return harmonicity.reshape(probabilities.size(0), probabilities.size(2))


def postprocess(probabilities,
                fmin=0.,
                fmax=MAX_FMAX,
                decoder=weighted_argmax,
                return_harmonicity=False):
    # Sampling is non-differentiable, so remove from graph
    probabilities = probabilities.detach()

    # Convert frequency range to pitch bin range
    minidx = frequency_to_bins(torch.tensor(fmin))
    maxidx = frequency_to_bins(torch.tensor(fmax),
                               torch.ceil)

    # Remove frequencies outside of allowable range
    probabilities[:, :minidx] = -float('inf')
    probabilities[:, maxidx:] = -float('inf')

    # Perform argmax or viterbi sampling
    bins, pitch = decoder(probabilities)

    if not return_harmonicity:
        return pitch

    # Compute harmonicity from probabilities and decoded pitch bins
    return pitch, harmonicity(probabilities, bins)


class At:
    """Simple thresholding at a specified probability value"""

    def __init__(self, value):
        self.value = value

    def __call__(self, pitch, harmonicity):
        pitch[harmonicity < self.value] = UNVOICED
        return pitch


def predict_step(probabilities, fmin=50., fmax=550., threshold=At(.21)):
    pitch, periodicity = postprocess(probabilities, fmin, fmax, weighted_argmax, True)
    return threshold(pitch, periodicity), periodicity


predict_step_compiled = torch.compile(predict_step)


def make():
    torch.manual_seed(0)
    probabilities = torch.rand(1, PITCH_BINS, 3)
    probabilities[0, 100, 0] = 4.0
    probabilities[0, 150, 1] = 4.0
    return predict_step, [(probabilities.clone(),), (probabilities[:, :, :2].clone(), 80., 1000.)]
