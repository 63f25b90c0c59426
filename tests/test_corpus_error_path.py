"""The corpus harness keeps a declared exception leaving the compiled call out of truth, and nothing else.

When an input set raises what the program declares in ``RAISING_INPUTS``,
Dynamo logs "Observed exception" (GB0088) where the exception leaves the
frame. That is the program's error path (``fullgraph=True`` raising the same
type is behaviour too), so it is neither a logged break nor, when flagged, a
false alarm. Every other site stays truth: a data-dependent branch on the way
to the ``raise``, and GB0088 logged by an input set that does not raise
(``data_ptr()`` raises inside Dynamo only). The Dynamo half measures small
programs in the harness's worker pool; the scoring half reads hand-made answers.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:  # `tests.corpus` is imported as a package from the repository root
    sys.path.insert(0, str(REPO))

from tests.corpus import pool, score  # noqa: E402
from tests.corpus.families import claims  # noqa: E402
from tests.corpus.layout import Program  # noqa: E402

#: A shape guard that raises on input 1 (declared), after a value branch every input takes.
GUARDED = '''
import torch


def f(x):
    if x.sum() > 0:
        x = x * 2
    if x.shape[0] != 2:
        raise ValueError("expected two rows")
    return x


def make():
    return f, [(torch.ones(2),), (torch.ones(3),)]


RAISING_INPUTS = {1: "ValueError"}
'''
BRANCH_LINE, RAISE_LINE = 5, 8

#: A guard with no break before it: under fullgraph=True the raise surfaces as Dynamo's "Observed exception".
RAISE_ONLY = '''
import torch


def f(x):
    if x.shape[0] != 2:
        raise ValueError("expected two rows")
    return x * 2


def make():
    return f, [(torch.ones(2),), (torch.ones(3),)]


RAISING_INPUTS = {1: "ValueError"}
'''

#: GB0088 with no exception reaching the caller: Dynamo's own failure on ``data_ptr()``.
DATA_PTR = '''
import torch


def f(x):
    return x if x.data_ptr() % 16 == 0 else x.clone()


def make():
    return f, [(torch.ones(4),)]
'''
DATA_PTR_LINE = 5


@pytest.fixture(scope="module")
def measured(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    root = tmp_path_factory.mktemp("error_path")
    tasks = []
    for name, text in (("guarded", GUARDED), ("data_ptr", DATA_PTR), ("raise_only", RAISE_ONLY)):
        (root / f"{name}.py").write_text(text.lstrip(), encoding="utf-8")
        # measured as a fixed copy too: the worker judges a variant's fullgraph verdict apart from the original's
        variants = {"same": str(root / f"{name}.py")} if name == "raise_only" else {}
        tasks.append({"name": name, "path": str(root / f"{name}.py"), "lint": False, "behaviour": True,
                      "variants": variants})
    answers = pool.run_tasks(tasks, timeout=300)
    for name, answer in answers.items():
        assert score.measured(answer), (name, answer.get("failure") or answer["original"]["error"])
    return answers


@pytest.mark.dynamo
def test_a_declared_exception_leaving_the_call_is_the_error_path(measured: dict[str, dict[str, Any]]) -> None:
    original = measured["guarded"]["original"]
    assert original["eager_errors"][1][0] == "ValueError"
    assert [[line, gb_id] for line, gb_id, _ in original["error_path_sites"]] == [[RAISE_LINE, "GB0088"]]
    assert [[line, gb_id] for line, gb_id, _ in original["sites"]] == [[BRANCH_LINE, "GB0170"]]


@pytest.mark.dynamo
def test_fullgraph_raising_the_declared_exception_is_behaviour(measured: dict[str, dict[str, Any]]) -> None:
    """fullgraph=True wraps the ValueError in Unsupported("Observed exception"): still the error path, not a failure."""
    variant = measured["raise_only"]["variants"]["same"]
    assert variant["sites"] == [] and [line for line, *_ in variant["error_path_sites"]] == [6]
    assert variant["fullgraph"] == [None, None]
    assert score.passes_fullgraph(variant)


@pytest.mark.dynamo
def test_observed_exception_without_a_raise_stays_a_break(measured: dict[str, dict[str, Any]]) -> None:
    original = measured["data_ptr"]["original"]
    assert original["error_path_sites"] == []
    assert [[line, gb_id] for line, gb_id, _ in original["sites"]] == [[DATA_PTR_LINE, "GB0088"]]


def _answer(sites: list[list[Any]], error_path: list[list[Any]], findings: list[list[Any]]) -> dict[str, Any]:
    original = {"error": None, "sites": sites, "error_path_sites": error_path, "traced_lines": [5, 6, 7, 8],
                "fullgraph": [None], "train": {"skipped": "not an nn.Module"}}
    return {"original": original, "lint": {"compiled": findings}}


def test_error_path_lines_are_neither_missed_nor_false_alarms(tmp_path: Path) -> None:
    program = Program(tmp_path / "prog_error_path.py")
    branch, observed = [5, "GB0170", "branch"], [8, "GB0088", "Observed exception"]
    answer = _answer([branch], [observed], [[5, "GM101"], [8, "GM104"]])
    detected = score.detection([program], {program.name: answer}, "compiled", claims())
    assert (detected.overall.logged, detected.overall.logged_found) == (1, 1)
    assert (detected.overall.flagged, detected.overall.flagged_correct) == (1, 1)
    assert (detected.error_path_lines, detected.error_path_flagged) == (1, 1)
    assert detected.misses == [] and detected.false_alarms == []


def test_a_line_also_logged_as_a_break_is_scored_as_one(tmp_path: Path) -> None:
    program = Program(tmp_path / "prog_both.py")
    observed = [8, "GB0088", "Observed exception"]
    answer = _answer([[8, "GB0170", "branch"]], [observed], [])
    detected = score.detection([program], {program.name: answer}, "compiled", claims())
    assert detected.overall.logged == 1 and detected.error_path_lines == 0
    assert len(detected.misses) == 1
