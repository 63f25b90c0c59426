"""Demucs training augmentations: Shift / FlipChannels / FlipSign / Scale / Remix modules chained in an nn.Sequential as the solver builds it; Remix and Scale draw `random.random() < self.proba` from Python's RNG each call and Remix raises on an indivisible batch.

Source: facebookresearch/demucs@e976d93ecc3865e5757426930257e200846a520a:demucs/augment.py:9-115
Also: demucs/solver.py:52-61 (augments list from args: Shift with
int(samplerate * shift), the flip switch, `getattr(augment, aug.capitalize())(**kw)`
when kw.proba, nn.Sequential), solver.py:307-309 (`sources = self.augment(sources)`
then the mix sum in training).
Kept: all five augmentation modules verbatim and the solver's construction loop.
Simplified: the OmegaConf args are a small attribute dict; the compiled entry is
the Sequential followed by the training mix sum; 4 sources, stereo, 64 samples,
shift 8.
"""
import random
import torch
import torch as th
from torch import nn


class AttrDict(dict):
    """Stand-in for an OmegaConf DictConfig node: mapping with attribute access."""
    def __getattr__(self, item):
        return self[item]



class Shift(nn.Module):
    """
    Randomly shift audio in time by up to `shift` samples.
    """
    def __init__(self, shift=8192, same=False):
        super().__init__()
        self.shift = shift
        self.same = same

    def forward(self, wav):
        batch, sources, channels, time = wav.size()
        length = time - self.shift
        if self.shift > 0:
            if not self.training:
                wav = wav[..., :length]
            else:
                srcs = 1 if self.same else sources
                offsets = th.randint(self.shift, [batch, srcs, 1, 1], device=wav.device)
                offsets = offsets.expand(-1, sources, channels, -1)
                indexes = th.arange(length, device=wav.device)
                wav = wav.gather(3, indexes + offsets)
        return wav


class FlipChannels(nn.Module):
    """
    Flip left-right channels.
    """
    def forward(self, wav):
        batch, sources, channels, time = wav.size()
        if self.training and wav.size(2) == 2:
            left = th.randint(2, (batch, sources, 1, 1), device=wav.device)
            left = left.expand(-1, -1, -1, time)
            right = 1 - left
            wav = th.cat([wav.gather(2, left), wav.gather(2, right)], dim=2)
        return wav


class FlipSign(nn.Module):
    """
    Random sign flip.
    """
    def forward(self, wav):
        batch, sources, channels, time = wav.size()
        if self.training:
            signs = th.randint(2, (batch, sources, 1, 1), device=wav.device, dtype=th.float32)
            wav = wav * (2 * signs - 1)
        return wav


class Remix(nn.Module):
    """
    Shuffle sources to make new mixes.
    """
    def __init__(self, proba=1, group_size=4):
        """
        Shuffle sources within one batch.
        Each batch is divided into groups of size `group_size` and shuffling is done within
        each group separatly. This allow to keep the same probability distribution no matter
        the number of GPUs. Without this grouping, using more GPUs would lead to a higher
        probability of keeping two sources from the same track together which can impact
        performance.
        """
        super().__init__()
        self.proba = proba
        self.group_size = group_size

    def forward(self, wav):
        batch, streams, channels, time = wav.size()
        device = wav.device

        if self.training and random.random() < self.proba:
            group_size = self.group_size or batch
            if batch % group_size != 0:
                raise ValueError(f"Batch size {batch} must be divisible by group size {group_size}")
            groups = batch // group_size
            wav = wav.view(groups, group_size, streams, channels, time)
            permutations = th.argsort(th.rand(groups, group_size, streams, 1, 1, device=device),
                                      dim=1)
            wav = wav.gather(1, permutations.expand(-1, -1, -1, channels, time))
            wav = wav.view(batch, streams, channels, time)
        return wav


class Scale(nn.Module):
    def __init__(self, proba=1., min=0.25, max=1.25):
        super().__init__()
        self.proba = proba
        self.min = min
        self.max = max

    def forward(self, wav):
        batch, streams, channels, time = wav.size()
        device = wav.device
        if self.training and random.random() < self.proba:
            scales = th.empty(batch, streams, 1, 1, device=device).uniform_(self.min, self.max)
            wav *= scales
        return wav


class augment:
    Shift = Shift
    FlipChannels = FlipChannels
    FlipSign = FlipSign
    Remix = Remix
    Scale = Scale


class AugmentedMix(nn.Module):
    """The solver's training-side use: augment the stacked sources, then mix them."""
    def __init__(self, args):
        super().__init__()
        # data augment
        augments = [augment.Shift(shift=int(args.dset.samplerate * args.dset.shift),
                                  same=args.augment.shift_same)]
        if args.augment.flip:
            augments += [augment.FlipChannels(), augment.FlipSign()]
        for aug in ['scale', 'remix']:
            kw = getattr(args.augment, aug)
            if kw.proba:
                augments.append(getattr(augment, aug.capitalize())(**kw))
        self.augment = torch.nn.Sequential(*augments)

    def forward(self, sources):
        sources = self.augment(sources)
        mix = sources.sum(dim=1)
        return sources, mix


ARGS = AttrDict(
    dset=AttrDict(samplerate=80, shift=0.1),
    augment=AttrDict(shift_same=False, flip=True,
                     scale=AttrDict(proba=1., min=0.25, max=1.25),
                     remix=AttrDict(proba=1., group_size=4)),
)

augmented_mix = torch.compile(AugmentedMix(ARGS))

RAISING_INPUTS = {2: "ValueError"}


def make():
    torch.manual_seed(0)
    sources = torch.randn(4, 4, 2, 64)
    return AugmentedMix(ARGS), [(sources,), (sources.clone() * 0.5,), (torch.randn(3, 4, 2, 64),)]
