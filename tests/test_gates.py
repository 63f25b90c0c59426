"""Breaks behind a static gate are still reported, and the message says when they happen.

``if self.training and torch.rand([]) < p:`` breaks only in training mode and
``if x.dtype == torch.float16 and torch.isinf(x).any():`` only for fp16
inputs (measured below with Dynamo). The findings stay, with a note.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from catalog_cases import measure_in_subprocess

from graphmend_lint import lint_source

LAYERDROP = '''
import torch
from torch import nn


class Layers(nn.Module):
    def __init__(self, layerdrop: float = 0.5) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.layerdrop = layerdrop

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.fc(x)
        if self.training and torch.rand([]) < self.layerdrop:
            return h
        return h * 2


def make():
    torch.manual_seed(0)
    return Layers(){mode}, [(torch.randn(3, 4),)]


compiled = torch.compile(Layers())
'''
FP16_CLAMP = '''
import torch


def clamp_inf(x: torch.Tensor) -> torch.Tensor:
    y = x * 2
    if y.dtype == torch.float16 and torch.isinf(y).any():
        y = torch.clamp(y, -1000, 1000)
    return y + 1


def make():
    return clamp_inf, [(torch.full((4,), 60000.0){dtype},)]


compiled = torch.compile(clamp_inf)
'''
EARLY_EXIT = '''
import torch
from torch import nn


class Plan(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.training:
            return x
        return x * x.sum().item()


compiled = torch.compile(Plan())
'''


def _messages(source: str, code: str) -> list[tuple[int, str]]:
    return [(d.start.line, d.message) for d in lint_source(textwrap.dedent(source)) if d.code == code]


def test_training_gate_is_named() -> None:
    [(line, message)] = _messages(LAYERDROP.format(mode=""), "GM101")
    assert line == 14 and message.endswith("(only in training)")


def test_dtype_gate_is_named() -> None:
    [(line, message)] = _messages(FP16_CLAMP.format(dtype=""), "GM101")
    assert line == 7 and message.endswith("(only in fp16)")


def test_a_gate_around_an_or_gates_each_of_its_operands() -> None:
    """Qwen2-Audio: ``x.dtype == torch.float16 and (torch.isinf(x).any() or torch.isnan(x).any())``."""
    source = FP16_CLAMP.format(dtype="").replace("torch.isinf(y).any()", "(torch.isinf(y).any() or torch.isnan(y).any())")
    messages = _messages(source, "GM101")
    assert len(messages) == 2 and all(message.endswith("(only in fp16)") for _, message in messages)
    ungated = source.replace("y.dtype == torch.float16 and ", "y.dtype == torch.float16 or ")
    assert not any("(only" in message for _, message in _messages(ungated, "GM101"))


def test_early_exit_on_eval_makes_the_rest_training_only() -> None:
    [(_, message)] = _messages(EARLY_EXIT, "GM301")
    assert message.endswith("(only in training)")


def test_ungated_break_has_no_note() -> None:
    source = FP16_CLAMP.format(dtype="").replace("y.dtype == torch.float16 and ", "")
    [(_, message)] = _messages(source, "GM101")
    assert "(only" not in message


@pytest.mark.dynamo
def test_gated_breaks_happen_only_where_the_note_says(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    programs = {
        "train": LAYERDROP.format(mode=".train()"),
        "eval": LAYERDROP.format(mode=".eval()"),
        "fp16": FP16_CLAMP.format(dtype=".half()"),
        "fp32": FP16_CLAMP.format(dtype=""),
    }
    paths = {}
    for label, text in programs.items():
        paths[label] = tmp_path / f"{label}.py"
        paths[label].write_text(textwrap.dedent(text))
    measured = measure_in_subprocess(paths.values())["programs"]
    breaks = {label: {tuple(site) for site in measured[str(path)]["attributed"]} for label, path in paths.items()}
    assert breaks == {"train": {(14, "GB0170")}, "eval": set(), "fp16": {(7, "GB0170")}, "fp32": set()}
