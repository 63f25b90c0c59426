"""``--fix --verify``: keep fixes the measurements back, roll back the others."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from graphmend_lint.config import Settings
from graphmend_lint.engine import FileReport
from graphmend_lint.verify.rollback import (
    KEPT,
    ROLLED_BACK,
    UNVERIFIED,
    changed_files_from_reports,
    changed_lines,
    verify_and_rollback,
)

GOOD = """
import torch


def step(x):
    y = x * 2
    print("y")
    return y + 1
"""
GOOD_FIXED = GOOD.replace('    print("y")', '    if not torch.compiler.is_compiling():\n        print("y")')
BAD = """
def scale(x):
    y = x * 3
    print("scaled")
    return y
"""
BAD_FIXED = BAD.replace('    print("scaled")\n', "").replace("x * 3", "x * 4")  # drops a break, breaks the maths
MAKE = """
import torch

import rb_bad
import rb_good


def run(x):
    return rb_good.step(rb_bad.scale(x))


def factory():
    return run, (torch.ones(4),)
"""


def dedent(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


def test_changed_lines_are_fixed_side_line_numbers():
    assert changed_lines(dedent(GOOD), dedent(GOOD_FIXED)) == {6, 7}
    assert changed_lines("a\nb\nc\n", "a\nc\n") == {2}  # a deletion marks the line after it
    assert changed_lines("a\n", "a\n") == set()


def test_changed_files_from_a_fix_run(tmp_path):
    path = tmp_path / "m.py"
    path.write_bytes(b"\xef\xbb\xbfx = 1\r\ny = 2\r\n")  # BOM and CRLF survive the round trip
    original = path.read_bytes()
    path.write_bytes(b"\xef\xbb\xbfx = 1\r\ny = 3\r\n")
    fixed = FileReport(str(path), source="x = 1\r\ny = 2\r\n", fixed_source="x = 1\r\ny = 3\r\n")
    untouched = FileReport(str(tmp_path / "n.py"), source="z = 1\n")
    failed = FileReport(str(path), source="x", fixed_source="y", errors=["cannot write"])
    assert changed_files_from_reports([fixed, untouched, failed]) == {str(path): (original, path.read_bytes())}


@pytest.mark.dynamo
def test_bad_fix_is_rolled_back_good_fix_kept(tmp_path):
    pytest.importorskip("torch")
    files = {"rb_good.py": (GOOD, GOOD_FIXED), "rb_bad.py": (BAD, BAD_FIXED), "rb_unused.py": ("a = 1\n", "a = 2\n")}
    changed = {}
    for name, (original, fixed) in files.items():
        path = tmp_path / name
        path.write_text(dedent(fixed))  # --fix already wrote the fixes
        changed[str(path)] = (dedent(original).encode(), dedent(fixed).encode())
    (tmp_path / "rb_make.py").write_text(dedent(MAKE))

    report = verify_and_rollback(changed, ["rb_make.py::factory"], Settings(root=str(tmp_path)))

    assert report.errors == []
    verdicts = {Path(p).name: v for p, v in report.files.items()}
    assert verdicts["rb_good.py"].action == KEPT
    assert "improved (logged breaks 2 -> 1)" in verdicts["rb_good.py"].evidence[0]
    assert verdicts["rb_bad.py"].action == ROLLED_BACK
    assert "worse (outputs differ" in verdicts["rb_bad.py"].evidence[0]
    assert verdicts["rb_unused.py"].action == UNVERIFIED  # no target imports it
    assert (tmp_path / "rb_bad.py").read_text() == dedent(BAD)
    assert (tmp_path / "rb_good.py").read_text() == dedent(GOOD_FIXED)
    assert (tmp_path / "rb_unused.py").read_text() == "a = 2\n"
    assert report.rolled_back == [str(tmp_path / "rb_bad.py")]


def _arm(breaks: int, executed: dict[str, list[int]], equal: bool = True):
    from graphmend_lint.verify.results import ArmResult

    return ArmResult(graph_count=breaks + 1, graph_break_count=breaks, logged_sites=breaks,
                     explain_break_count=breaks, breaks=[], skipped_frames=[], executed=executed,
                     equivalence={"outputs_equal": equal, "max_abs_diff": 0.0, "detail": "" if equal else "x"})


def test_verdict_rules():
    from graphmend_lint.verify.rollback import IMPROVED, NOT_REDUCED, UNEXERCISED, WORSE, _verdict

    original = _arm(2, {})
    ran = {"/p/m.py": [3, 4]}
    assert _verdict(original, "callable failed: NameError: y", "/p/m.py", {3})[0] == WORSE
    assert _verdict(original, _arm(1, ran, equal=False), "/p/m.py", {3})[0] == WORSE
    assert _verdict(original, _arm(3, ran), "/p/m.py", {3})[0] == WORSE
    assert _verdict(original, _arm(2, ran), "/p/m.py", {9}) == (UNEXERCISED, "its changed lines did not run")
    assert _verdict(original, _arm(2, ran), "/p/m.py", {4}) == (NOT_REDUCED, "logged breaks 2 -> 2")
    assert _verdict(original, _arm(1, ran), "/p/m.py", {4}) == (IMPROVED, "logged breaks 2 -> 1")
    original.fullgraph, lost = {"passes": True, "error": ""}, _arm(2, ran)
    lost.fullgraph = {"passes": False, "error": "Unsupported: print"}
    assert _verdict(original, lost, "/p/m.py", {4})[0] == WORSE
