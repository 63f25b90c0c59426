"""audiocraft condition dropout in the LM's training step: ClassifierFreeGuidanceDropout and AttributeDropout draw `torch.rand(1, generator=self.rng).item() < p`, then `deepcopy` the conditioning attributes before nullifying them.

Source: facebookresearch/audiocraft@896ec7c47f5e5d1e5aa1e4b260c4405328bf009d:audiocraft/modules/conditioners.py:55-125,138-183,1320-1460
Also: audiocraft/models/lm.py (LMModel.compute_predictions applying cfg_dropout
then att_dropout before tokenizing the conditions).
Kept: WavCondition, ConditioningAttributes with its attributes property,
nullify_condition, nullify_wav, dropout_condition (text and wav branches),
DropoutModule's seeded generator, AttributeDropout and
ClassifierFreeGuidanceDropout as written.
Simplified: no joint-embed or symbolic conditions; the condition provider is
a word-level lookup table for text plus a length-masked mean for the wav
condition, and the LM is one linear layer over codes + condition; each
dropout module's generator is seeded (1234), so its first draws are fixed:
the probabilities are set so attribute dropout drops text and keeps wav; dim 8.
"""
import typing as tp
from collections import defaultdict
from copy import deepcopy
from dataclasses import dataclass, field

import torch
from torch import nn


class WavCondition(tp.NamedTuple):
    wav: torch.Tensor
    length: torch.Tensor
    sample_rate: tp.List[int]
    path: tp.List[tp.Optional[str]] = []
    seek_time: tp.List[tp.Optional[float]] = []


@dataclass
class ConditioningAttributes:
    text: tp.Dict[str, tp.Optional[str]] = field(default_factory=dict)
    wav: tp.Dict[str, WavCondition] = field(default_factory=dict)

    def __getitem__(self, item):
        return getattr(self, item)

    @property
    def text_attributes(self):
        return self.text.keys()

    @property
    def wav_attributes(self):
        return self.wav.keys()

    @property
    def attributes(self):
        return {
            "text": self.text_attributes,
            "wav": self.wav_attributes,
        }


def nullify_condition(condition, dim: int = 1):
    assert dim != 0, "dim cannot be the batch dimension!"
    assert isinstance(condition, tuple) and \
        isinstance(condition[0], torch.Tensor) and \
        isinstance(condition[1], torch.Tensor), "'nullify_condition' got an unexpected input type!"
    cond, mask = condition
    B = cond.shape[0]
    last_dim = cond.dim() - 1
    out = cond.transpose(dim, last_dim)
    out = 0. * out[..., :1]
    out = out.transpose(dim, last_dim)
    mask = torch.zeros((B, 1), device=out.device).int()
    assert cond.dim() == out.dim()
    return out, mask


def nullify_wav(cond: WavCondition) -> WavCondition:
    null_wav, _ = nullify_condition((cond.wav, torch.zeros_like(cond.wav)), dim=cond.wav.dim() - 1)
    return WavCondition(
        wav=null_wav,
        length=torch.tensor([0] * cond.wav.shape[0], device=cond.wav.device),
        sample_rate=cond.sample_rate,
        path=[None] * cond.wav.shape[0],
        seek_time=[None] * cond.wav.shape[0],
    )


def dropout_condition(sample: ConditioningAttributes, condition_type: str, condition: str, **kwargs) -> ConditioningAttributes:
    if condition_type not in ['text', 'wav']:
        raise ValueError(
            "dropout_condition got an unexpected condition type!"
            f" expected 'text' or 'wav' but got '{condition_type}'"
        )

    if condition not in getattr(sample, condition_type):
        raise ValueError(
            "dropout_condition received an unexpected condition!"
            f" expected wav={sample.wav.keys()} and text={sample.text.keys()}"
            f" but got '{condition}' of type '{condition_type}'!"
        )

    if condition_type == 'wav':
        wav_cond = sample.wav[condition]
        sample.wav[condition] = nullify_wav(wav_cond)
    else:
        sample.text[condition] = None

    return sample


class DropoutModule(nn.Module):
    """Base module for all dropout modules."""
    def __init__(self, seed: int = 1234):
        super().__init__()
        self.rng = torch.Generator()
        self.rng.manual_seed(seed)


class AttributeDropout(DropoutModule):
    def __init__(self, p: tp.Dict[str, tp.Dict[str, float]], active_on_eval: bool = False, seed: int = 1234):
        super().__init__(seed=seed)
        self.active_on_eval = active_on_eval
        # construct dict that return the values from p otherwise 0
        self.p = {}
        for condition_type, probs in p.items():
            self.p[condition_type] = defaultdict(lambda: 0, probs)

    def forward(self, samples: tp.List[ConditioningAttributes]) -> tp.List[ConditioningAttributes]:
        if not self.training and not self.active_on_eval:
            return samples

        samples = deepcopy(samples)
        for condition_type, ps in self.p.items():  # for condition types [text, wav, symbolic]
            for condition, p in ps.items():  # for attributes of each type (e.g., [artist, genre])
                if torch.rand(1, generator=self.rng).item() < p:
                    for sample in samples:
                        dropout_condition(sample, condition_type, condition)
        return samples

    def __repr__(self):
        return f"AttributeDropout({dict(self.p)})"


class ClassifierFreeGuidanceDropout(DropoutModule):
    def __init__(self, p: float, seed: int = 1234):
        super().__init__(seed=seed)
        self.p = p

    def forward(self, samples: tp.List[ConditioningAttributes],
                cond_types: tp.List[str] = ["wav", "text"],
                **kwargs) -> tp.List[ConditioningAttributes]:
        if not self.training:
            return samples

        # decide on which attributes to drop in a batched fashion
        drop = torch.rand(1, generator=self.rng).item() < self.p
        if not drop:
            return samples

        # nullify conditions of all attributes
        samples = deepcopy(samples)
        for condition_type in cond_types:
            for sample in samples:
                for condition in sample.attributes[condition_type]:
                    dropout_condition(sample, condition_type, condition,
                                      **kwargs)
        return samples

    def __repr__(self):
        return f"ClassifierFreeGuidanceDropout(p={self.p})"


class ConditionProvider(nn.Module):
    """Text by word lookup, wav by a length-masked mean, both projected to the LM dim."""

    def __init__(self, vocab: tp.List[str], dim: int = 8):
        super().__init__()
        self.vocab = {w: i + 1 for i, w in enumerate(vocab)}
        self.text_emb = nn.Embedding(len(vocab) + 1, dim, padding_idx=0)
        self.wav_proj = nn.Linear(1, dim)

    def forward(self, conditions: tp.List[ConditioningAttributes]) -> torch.Tensor:
        out = []
        for sample in conditions:
            text = sample.text["description"]
            ids = [self.vocab.get(w, 0) for w in text.split()] if text is not None else [0]
            text_vec = self.text_emb(torch.tensor(ids)).mean(0)
            wav_cond = sample.wav["self_wav"]
            steps = torch.arange(wav_cond.wav.shape[-1])
            mask = (steps[None, :] < wav_cond.length[:, None]).float()
            wav_mean = (wav_cond.wav.mean(1) * mask).sum(-1, keepdim=True) / mask.sum(-1, keepdim=True).clamp(min=1)
            out.append(text_vec + self.wav_proj(wav_mean)[0])
        return torch.stack(out)


class LMModel(nn.Module):
    def __init__(self, card: int = 16, dim: int = 8, cfg_dropout: float = 0.02, attribute_dropout=None):
        super().__init__()
        self.cfg_dropout = ClassifierFreeGuidanceDropout(p=cfg_dropout)
        self.att_dropout = AttributeDropout(p=attribute_dropout or {"text": {"description": 0.2}, "wav": {"self_wav": 0.3}})
        self.condition_provider = ConditionProvider(["happy", "rock", "slow", "piano"], dim)
        self.emb = nn.Embedding(card, dim)
        self.linear = nn.Linear(dim, card)

    def compute_predictions(self, codes: torch.Tensor, conditions: tp.List[ConditioningAttributes]) -> torch.Tensor:
        # apply dropout modules
        conditions = self.cfg_dropout(conditions)
        conditions = self.att_dropout(conditions)
        condition_tensors = self.condition_provider(conditions)
        x = self.emb(codes) + condition_tensors[:, None, :]
        return self.linear(x)

    def forward(self, codes, conditions):
        return self.compute_predictions(codes, conditions)


def attributes(description, wav, length):
    return ConditioningAttributes(
        text={"description": description},
        wav={"self_wav": WavCondition(wav=wav, length=torch.tensor([length]), sample_rate=[32000], path=[None], seek_time=[0.0])},
    )


def make():
    torch.manual_seed(0)
    lm = LMModel()
    codes = torch.randint(0, 16, (2, 5))
    conditions = [
        attributes("happy rock", torch.randn(1, 1, 12), 12),
        attributes("slow piano", torch.randn(1, 1, 12), 7),
    ]
    return lm, [(codes, conditions), (codes[:1], conditions[:1]), (codes, [attributes(None, torch.randn(1, 1, 12), 5)] * 2)]


def build_solver():
    """MusicGenSolver compiles the LM it trains."""
    return torch.compile(LMModel())
