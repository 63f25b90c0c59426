"""verify tells the truth: logged breaks are the headline, fullgraph is the acid test, nothing passes silently.

End to end through ``python -m graphmend_lint verify`` with real Dynamo in
fresh arm processes (slow). Where the fix itself is not under test, the
fixed arm uses hand-written transforms from ``verify_fixtures/transforms.py``.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from conftest import REPO, Completed, run_cli

pytest.importorskip("torch")
pytestmark = pytest.mark.dynamo

FIXTURES = REPO / "tests" / "verify_fixtures"


def verify(tmp_path: Path, *args: str) -> tuple[Completed, dict[str, Any]]:
    result = run_cli("verify", *args, "--json", "out.json", cwd=tmp_path)
    (data,) = json.loads((tmp_path / "out.json").read_text())
    return result, data


def table_row(out: str) -> dict[str, str]:
    """The first row of the terminal table, by column (cells are separated by two spaces or more)."""
    header, _, row = out.splitlines()[:3]
    split = lambda line: [cell for cell in line.split("  ") if cell.strip()]  # noqa: E731
    return {name.strip(): cell.strip() for name, cell in zip(split(header), split(row))}


def with_transform(name: str) -> list[str]:
    return [f"{FIXTURES / 'branch.py'}::factory", "--transform", f"{FIXTURES / 'transforms.py'}::{name}"]


def test_a_print_moved_to_the_end_is_still_a_logged_break(tmp_path):
    """GB0059 is still logged after the epilogue deferral: not removed, and fullgraph still fails."""
    result, data = verify(tmp_path, *with_transform("predicate_and_defer"))
    original, fixed = data["original"], data["fixed"]
    assert (original["logged_sites"], fixed["logged_sites"]) == (2, 1)
    assert [b["gb_id"] for b in fixed["breaks"]] == ["GB0059"]
    assert (original["graph_break_count"], fixed["graph_break_count"]) == (2, 0)  # nothing splits any more...
    assert original["fullgraph"]["passes"] is False and fixed["fullgraph"]["passes"] is False  # ...yet it breaks
    row = table_row(result.out)
    assert (row["breaks"], row["fullgraph"], row["splitting"]) == ("2 -> 1", "fails -> fails", "2 -> 0")
    assert "breaks: distinct graph-break sites Dynamo logged" in result.out  # the legend
    assert result.code == 0, result.err  # nothing got worse


def test_fullgraph_passes_once_every_break_is_removed(tmp_path):
    result, data = verify(tmp_path, *with_transform("predicate_and_guard"))
    assert (data["original"]["logged_sites"], data["fixed"]["logged_sites"]) == (2, 0)
    assert data["fixed"]["fullgraph"] == {"passes": True, "error": ""}
    assert table_row(result.out)["fullgraph"] == "fails -> passes"
    assert data["status"] == "pass" and result.code == 0


# GM201 guards this print (an unsafe fix): `y.data` is not a value torch's print op is known to take.
PRINT_ONLY = """
import torch


def step(x):
    y = x * 2
    print("y:", y.data)
    return y + 1


def factory():
    return step, (torch.ones(4),)
"""


def test_fixes_that_need_unsafe_fixes_are_reported_instead_of_a_pass(tmp_path):
    (tmp_path / "print_only.py").write_text(PRINT_ONLY.lstrip())
    result, data = verify(tmp_path, "print_only.py::factory", "--select", "GM201")
    assert data["fixes_applied"] == 0 and data["fixes_held_back"] == 1
    assert data["status"] == "unfixed"
    assert data["detail"] == "1 fix not applied: need `--unsafe-fixes`"
    assert "UNFIXED" in result.out and "0 (1 need --unsafe-fixes)" in result.out
    assert result.code == 1


def test_verify_applies_exactly_the_selected_rules(tmp_path):
    shutil.copy(FIXTURES / "branch.py", tmp_path / "branch.py")
    _, data = verify(tmp_path, "branch.py::factory", "--select", "GM101", "--unsafe-fixes")
    assert data["fixed"]["fixes"] == {str(tmp_path / "branch.py"): ["GM101"]}  # GM201 not selected, not fixed
    assert data["fixes_held_back"] == 0
    assert run_cli("verify", "branch.py::factory", "--select", "GM1O1", cwd=tmp_path).code == 2  # a typo


def test_scope_module_extends_the_default_scope(tmp_path):
    for name in ("scope_target.py", "scope_helper.py"):
        shutil.copy(FIXTURES / name, tmp_path / name)
    _, data = verify(tmp_path, "scope_target.py::factory", "--scope-module", "scope_helper")
    assert {m["name"] for m in data["original"]["modules"]} == {"scope_target", "scope_helper"}


def tagged(path: Path, tag: str) -> int:
    return next(n for n, line in enumerate(path.read_text().splitlines(), 1) if f"# {tag}" in line)


def test_a_fix_that_removes_a_break_on_another_line_is_credited_with_it(tmp_path):
    """Reconciliation by disappearance: the np.lcm fix removes the break at the `if`, forty lines away in reformer."""
    program = tmp_path / "cause_elsewhere.py"
    shutil.copy(FIXTURES / "cause_elsewhere.py", program)
    cause, harmless, broken = (tagged(program, tag) for tag in ("CAUSE", "HARMLESS", "BREAK"))
    result, data = verify(tmp_path, "cause_elsewhere.py::factory", "--unsafe-fixes", "--select", "GM403")
    reconciliation = data["reconciliation"]
    assert [(s["line"], s["status"], s["via"], s["codes"]) for s in reconciliation["sites"]] == [
        (broken, "found", "fix", ["GM403"])
    ]
    findings = {f["line"]: (f["status"], f["removes"]) for f in reconciliation["findings"]}
    assert findings == {cause: ("confirmed", [broken]), harmless: ("not_a_break", [])}
    assert (reconciliation["missed"], reconciliation["not_a_break"]) == (0, 1)
    assert "which breaks does GM403" in result.err  # two candidate fixes: each was tried alone
    assert f"cause_elsewhere.py:{broken} GB0170 is found by its cause elsewhere" in result.out


def test_bench_shows_progress_and_cold_start_spread_over_fresh_processes(tmp_path):
    result, data = verify(tmp_path, *with_transform("predicate"), "--bench", "--iters", "3", "--warmup", "1",
                          "--cold-runs", "2", "--threads", "1", "--backend", "eager")
    for role in ("original", "fixed"):
        assert f"[bench] cold start 2/2, {role}: a fresh process compiles the first call" in result.err
        assert len(data["bench"][role]["cold_runs"]) == 2
    assert "benchmarking torch.compile(backend='eager', mode=None): compiling, then 1 warm-up + 3 timed" in result.err
    within = data["bench"]["cold_within_noise"]
    assert f"cold start over 2 fresh processes per arm is {'within' if within else 'outside'} noise" in result.out
    assert "  cold s: first compiled call, compilation included, median of fresh processes [min-max]" in result.out
    assert result.code == 0, result.err
