"""A finding gated on a dtype the program never runs is unobserved, not a false alarm.

Issue 14 asks the linter to report ``if x.dtype == torch.float16 and
torch.isinf(x).any():`` with "(only in fp16)": the break is real, for fp16
inputs. A corpus program that runs in fp32 cannot confirm or refute it, so the
score counts such a line like one Dynamo never traced. When the program does
run the gated dtype, a line Dynamo does not log stays a false alarm.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import torch
from torch import nn

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:  # `tests.corpus` is imported as a package from the repository root
    sys.path.insert(0, str(REPO))

from tests.corpus import dynamo, lint, score  # noqa: E402
from tests.corpus.families import claims  # noqa: E402
from tests.corpus.layout import Program  # noqa: E402

GATED = '''import torch


@torch.compile
def clamp_inf(x):
    if x.dtype == torch.float16 and torch.isinf(x).any():
        x = x.clamp(-1e4, 1e4)
    return x * 2
'''
GATED_LINE = 6


def test_the_linter_names_the_gate_and_the_harness_reads_it(tmp_path: Path) -> None:
    path = tmp_path / "gated.py"
    path.write_text(GATED, encoding="utf-8")
    found = lint.findings(path)
    assert (GATED_LINE, "GM101") in found["compiled"]
    assert found["dtype_gated"]["compiled"] == {GATED_LINE: ["float16"]}


def test_a_line_with_an_ungated_finding_too_is_not_gated() -> None:
    messages = [(6, "branch ... causes a graph break (only in fp16/bf16)"), (6, "`.item()` causes a graph break"),
                (9, "branch ... (only in fp16, only in training)")]
    assert lint._dtype_gated_lines(messages) == {9: ["float16"]}
    assert lint._dtype_gated_lines(messages[:1]) == {6: ["bfloat16", "float16"]}


def test_float_dtypes_are_read_from_inputs_and_module_state() -> None:
    inputs = [(torch.ones(2, dtype=torch.float16), {"ids": torch.ones(2, dtype=torch.long)}), ([torch.ones(1)],)]
    assert dynamo.float_dtypes(lambda x: x, inputs) == {"float16", "float32"}
    assert dynamo.float_dtypes(nn.Linear(2, 2).double(), [(torch.ones(2, dtype=torch.long),)]) == {"float64"}


def _answer(float_dtypes: list[str]) -> dict[str, Any]:
    original = {"error": None, "sites": [], "traced_lines": [5, GATED_LINE, 7, 8], "fullgraph": [None],
                "float_dtypes": float_dtypes, "train": {"skipped": "not an nn.Module"}}
    lint_answer = {"compiled": [[GATED_LINE, "GM101"]], "dtype_gated": {"compiled": {str(GATED_LINE): ["float16"]}}}
    return {"original": original, "lint": lint_answer}


def test_gated_on_a_dtype_not_run_is_unobserved(tmp_path: Path) -> None:
    program = Program(tmp_path / "prog_gated.py")
    detected = score.detection([program], {program.name: _answer(["float32"])}, "compiled", claims())
    assert (detected.overall.flagged, detected.overall.flagged_unobserved) == (1, 1)
    assert detected.overall.precision_observed is None
    assert detected.false_alarms == [f"{program.name}:{GATED_LINE} GM101 (unobserved: float16 not run)"]


def test_gated_on_a_dtype_that_ran_is_a_false_alarm(tmp_path: Path) -> None:
    program = Program(tmp_path / "prog_gated.py")
    detected = score.detection([program], {program.name: _answer(["float16"])}, "compiled", claims())
    assert (detected.overall.flagged, detected.overall.flagged_unobserved) == (1, 0)
    assert detected.false_alarms == [f"{program.name}:{GATED_LINE} GM101"]
