"""The break-cause rules against real Dynamo (torch 2.13, CPU): breaks where the linter says, gone after the fix.

Every catalog program of GM106, GM205, GM303, GM404 and GM501-GM519 is
measured in a subprocess (``catalog_dynamo_worker.py``): the logged breaks,
placed at the program's own line, must be exactly those of ``CASES``, whose
lines are the finding lines (GM519's bad program fails to compile instead:
``Case.compile_error``). Every fixed program logs no break, compiles with
``fullgraph=True`` and computes what the bad one does on every input set,
eagerly and compiled.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("torch")

from catalog_cases import CATALOG, fix_pairs, measure_catalog, measure_in_subprocess  # noqa: E402
from test_break_causes_catalog import CASES, CODES  # noqa: E402

from graphmend_lint import fix_source  # noqa: E402
from graphmend_lint.config import Settings  # noqa: E402

pytestmark = pytest.mark.dynamo
PAIRS = fix_pairs(CODES)


@pytest.fixture(scope="module")
def measured() -> dict[str, Any]:
    """Every program measured once, and every pair compared, in one subprocess."""
    return measure_catalog(sorted(CASES), PAIRS)


@pytest.mark.parametrize("name", sorted(CASES))
def test_dynamo_breaks_exactly_where_the_case_says(name: str, measured) -> None:
    report = measured["programs"][name]
    expected = CASES[name]
    assert {tuple(site) for site in report["attributed"]} == set(expected.breaks)
    assert report["outside"] == [], "verify sites a break in the standard library at the program's call"
    assert bool(report["skipped_frames"]) is expected.frame_skipped
    assert report["compile_error"] == expected.compile_error


@pytest.mark.parametrize(("bad", "fixed"), PAIRS)
def test_fix_removes_every_break(bad: str, fixed: str, measured) -> None:
    assert measured["programs"][bad]["break_count"] > 0 or measured["programs"][bad]["compile_error"]
    assert measured["programs"][fixed]["break_count"] == 0
    assert measured["programs"][fixed]["graph_count"] == 1


@pytest.mark.parametrize(("bad", "fixed"), PAIRS)
def test_fixed_program_computes_the_same_outputs_and_compiles_fullgraph(bad: str, fixed: str, measured) -> None:
    assert measured["pairs"][(bad, fixed)]["problems"] == []


@pytest.mark.parametrize(
    ("name", "remaining"),
    [("GM505/bad_output_capturing_lstm.py", {"GB0014"}), ("GM505/bad_patch_slices.py", {"GB0124"})],
)
def test_tuple_fix_alone_removes_the_comprehension_break(name: str, remaining: set[str], tmp_path: Path) -> None:
    """GM505's fix helps even when the break that made Dynamo compile the frame has no fix: GB4347 goes, it stays."""
    bad = CATALOG / name
    fixed = fix_source(bad.read_text(), str(bad), Settings(select=("GM505",)), unsafe=True)
    assert [d.code for d in fixed.applied] == ["GM505"]
    program = tmp_path / bad.name
    program.write_text(fixed.source)
    report = measure_in_subprocess([program])["programs"][str(program)]
    assert {gb for _, gb in report["attributed"]} == remaining
