"""The corpus harness measures modules in training mode too (issue 14): truth is the union of both modes.

A module that ``make()`` builds with a submodule in eval mode is run again
after ``.train()``; its training-only breaks join the logged sites, marked as
such, and the fix evaluation compares eager outputs and runs ``fullgraph=True``
in both modes. The Dynamo half measures small programs through the harness's
own worker pool (fresh processes); the scoring half reads hand-made answers.
"""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:  # `tests.corpus` is imported as a package from the repository root
    sys.path.insert(0, str(REPO))

from tests.corpus import pool, score  # noqa: E402
from tests.corpus.families import claims  # noqa: E402
from tests.corpus.layout import Program  # noqa: E402

#: A dropout model whose training-only branch reads a tensor's value (GB0170 when training).
DROPPED = '''
import torch
from torch import nn


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.drop = nn.Dropout(0.5)

    def forward(self, x):
        h = self.drop(self.fc(x))
        if self.training and h.sum() > 0:
            h = h * 2
        return h{extra}


def make():
    torch.manual_seed(0)
    return Block(){built}, [(torch.randn(3, 4),), (-torch.ones(3, 4),)]
'''
TRAINING_ONLY_LINE = next(n for n, line in enumerate(DROPPED.lstrip().splitlines(), 1) if "self.training and" in line)

#: Eager cannot run this module in training mode (a guard, as inference-only code has): recorded, not fatal.
INFERENCE_ONLY = '''
import torch
from torch import nn


class Head(nn.Module):
    def forward(self, x):
        if self.training:
            torch._dynamo.graph_break()
            raise NotImplementedError("inference only")
        return x + 1


def make():
    return Head().eval(), [(torch.ones(2),)]
'''

FUNCTION = '''
import torch


def f(x):
    if x.sum() > 0:
        return x * 2
    return x


def make():
    return f, [(torch.ones(2),)]
'''


def _program(root: Path, name: str, text: str) -> Program:
    path = root / f"{name}.py"
    path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    return Program(path)


@pytest.fixture(scope="module")
def measured(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    root = tmp_path_factory.mktemp("training")
    programs = {
        "eval_built": DROPPED.format(built=".eval()", extra=""),
        "train_built": DROPPED.format(built="", extra=""),
        "inference_only": INFERENCE_ONLY,
        "function": FUNCTION,
    }
    paths = {name: _program(root, name, text).path for name, text in programs.items()}
    variants = {
        # the same file: dropout masks must match between original and copy, in training too
        "same": _program(root, "same", programs["eval_built"]).path,
        # changes what training returns, never what eval returns
        "changed": _program(root, "changed", DROPPED.format(built=".eval()", extra=" * (1.5 if self.training else 1)")).path,
    }
    tasks = [
        {"name": name, "path": str(path), "lint": name == "eval_built", "behaviour": True,
         "variants": {key: str(value) for key, value in variants.items()} if name == "eval_built" else {}}
        for name, path in paths.items()
    ]
    answers = pool.run_tasks(tasks, timeout=300)
    for name, answer in answers.items():
        assert score.measured(answer), (name, answer.get("failure") or answer["original"]["error"])
    return answers


@pytest.mark.dynamo
def test_a_training_only_break_is_logged_and_marked(measured: dict[str, dict[str, Any]]) -> None:
    original = measured["eval_built"]["original"]
    assert original["train"]["skipped"] is None and original["train"]["error"] is None
    assert [TRAINING_ONLY_LINE, "GB0170", "Data-dependent branching"] in original["sites"]
    assert original["train"]["train_only_sites"] == [[TRAINING_ONLY_LINE, "GB0170", "Data-dependent branching"]]
    assert TRAINING_ONLY_LINE in original["traced_lines"]
    assert score.training_only_lines(measured["eval_built"]) == {TRAINING_ONLY_LINE}


@pytest.mark.dynamo
def test_only_modules_with_an_eval_submodule_run_again(measured: dict[str, dict[str, Any]]) -> None:
    """Training mode as built, or a function: one run, no training-only sites (nothing to add)."""
    assert measured["train_built"]["original"]["train"]["skipped"] == "built in training mode"
    assert measured["function"]["original"]["train"]["skipped"] == "not an nn.Module"
    trained_as_built = measured["train_built"]["original"]
    assert [TRAINING_ONLY_LINE, "GB0170", "Data-dependent branching"] in trained_as_built["sites"]


@pytest.mark.dynamo
def test_a_module_eager_cannot_train_is_recorded_not_fatal(measured: dict[str, dict[str, Any]]) -> None:
    original = measured["inference_only"]["original"]
    assert original["error"] is None and original["eager_errors"] == [None]
    assert original["train"]["unrunnable"] == {"0": "NotImplementedError: inference only"}
    assert original["sites"] == [] and original["train"]["sites"] == []  # its break is on a path nobody runs
    assert score.passes_fullgraph(original)


@pytest.mark.dynamo
def test_fix_evaluation_compares_training_outputs_with_the_same_dropout(measured: dict[str, dict[str, Any]]) -> None:
    variants = measured["eval_built"]["variants"]
    assert variants["same"]["eager_differences"] == []
    assert variants["same"]["compiled_differences"] == []
    changed = variants["changed"]["eager_differences"]
    assert changed and all(difference.startswith("train input ") for difference in changed), changed


@pytest.mark.dynamo
def test_fullgraph_fails_on_a_break_only_training_takes(measured: dict[str, dict[str, Any]]) -> None:
    original = measured["eval_built"]["original"]
    assert original["fullgraph"] == [None, None]  # as built, eval mode never reads h.sum()
    assert original["train"]["fullgraph"][0] is not None
    assert not score.passes_fullgraph(original)


def _answer(sites: list[list[Any]], train_only: list[list[Any]], findings: list[list[Any]]) -> dict[str, Any]:
    original = {"error": None, "sites": sites, "traced_lines": [5, 6, 7], "fullgraph": [None],
                "train": {"skipped": None, "error": None, "unrunnable": {}, "sites": train_only,
                          "train_only_sites": train_only, "fullgraph": [None]}}
    return {"original": original, "lint": {"compiled": findings}}


def test_training_only_lines_are_counted_and_named(tmp_path: Path) -> None:
    program = _program(tmp_path, "prog_training", "import torch\n\ndef make():\n    return None, []\n")
    both, train_only = [6, "GB0170", "branch"], [7, "GB0124", "item"]
    answer = _answer([both, train_only], [train_only], [[6, "GM101"]])
    detected = score.detection([program], {program.name: answer}, "compiled", claims())
    assert detected.training.as_json() == {"measured": 1, "failed": 0, "unrunnable": 0,
                                           "logged_only_in_training": 1, "found_only_in_training": 0}
    assert detected.misses == [f"{program.name}:7 GB0124 ({claims().family_of_site('GB0124')}) item (training only)"]
    # a line logged in both modes under another GB id is not training-only
    assert score.training_only_lines(_answer([both, [6, "GB0124", "item"]], [[6, "GB0124", "item"]], [])) == set()


def test_passes_fullgraph_needs_the_training_run_too() -> None:
    answer = _answer([], [], [])
    assert score.passes_fullgraph(answer["original"])
    answer["original"]["train"]["fullgraph"] = ["Unsupported: Data-dependent branching"]
    assert score.fullgraph_failures(answer["original"]) == ["train input 0: Unsupported: Data-dependent branching"]
    answer["original"]["train"] = {"skipped": None, "error": "RuntimeError: boom", "fullgraph": []}
    assert score.passes_fullgraph(answer["original"])  # a training run that could not be made is counted elsewhere
