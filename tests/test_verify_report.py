"""Rendering and verdicts from hand-built results (no torch, no subprocess)."""

from __future__ import annotations

import json

import pytest

from graphmend_lint.verify import report
from graphmend_lint.verify.cli import exit_code
from graphmend_lint.verify.reconcile import Finding, Site, reconcile
from graphmend_lint.verify.results import ArmResult, BreakInfo, ColdStarts, TargetResult

ENV = {"torch": "2.13.0", "transformers": "5.23.0", "python": "3.11.7", "device": "cpu",
       "device_name": "Test CPU (2 cores)", "machine": "box Linux x86_64"}
MODEL = "/p/model.py"


def arm(breaks: int, skipped=(), equal=True, bench=None, fixes=None, held_back=(), splitting=None) -> ArmResult:
    sites = [BreakInfo("Data-dependent branching", "GB0170", MODEL, 10 + i, True) for i in range(breaks)]
    return ArmResult(
        graph_count=breaks + 1, graph_break_count=breaks if splitting is None else splitting, logged_sites=breaks,
        explain_break_count=breaks, breaks=sites, skipped_frames=list(skipped),
        modules=[{"name": "model", "filename": MODEL, "changed": bool(fixes), "fixes": fixes or [],
                  "held_back": list(held_back)}],
        environment=ENV, tolerances={"atol": 1e-6, "rtol": 1e-5},
        equivalence={"outputs_equal": equal, "max_abs_diff": 0.0 if equal else 2.0,
                     "detail": "" if equal else "input set 0: out: max abs diff 2"},
        bench=bench, fullgraph={"passes": breaks == 0, "error": "" if breaks == 0 else "Unsupported: branch"},
    )


def bench(cold: float, steady: float) -> dict:
    return {"device": "cpu", "compiled": {"cold_s": cold, "steady_ms": steady, "p90_ms": steady + 1},
            "eager": {"cold_s": None, "steady_ms": 9.0, "p90_ms": 10.0}}


def passing() -> TargetResult:
    result = TargetResult("m.py::make", arm(2, bench=bench(3.0, 5.0)), arm(0, bench=bench(1.5, 2.0), fixes=["GM101"]))
    result.reconciliation = reconcile([Site(MODEL, 10, "GB0170", "r", True), Site(MODEL, 11, "GB0170", "r", True)],
                                      [Finding("GM101", MODEL, 10, 10)], [MODEL], {MODEL: [10, 11]}, {})
    return result


def test_verdicts():
    assert passing().status == "pass"
    assert TargetResult("t", arm(1), arm(1, equal=False)).status == "fail"
    worse = TargetResult("t", arm(1), arm(2))
    assert worse.status == "fail" and "more logged graph breaks after the fix (1 -> 2)" in worse.detail
    # a break that no longer splits but is still logged does not count as removed, nor as a pass of fullgraph
    deferred = TargetResult("t", arm(1, splitting=1), arm(1, splitting=0, fixes=["GM201"]))
    assert deferred.status == "pass" and report.terminal([deferred], bench=False).count("1 -> 1") == 1
    lost = TargetResult("t", arm(0), arm(0, fixes=["GM101"]))
    lost.fixed.fullgraph = {"passes": False, "error": "Unsupported: print"}  # type: ignore[union-attr]
    assert lost.status == "fail" and "fullgraph=True) passed before the fix and fails after" in lost.detail
    held = TargetResult("t", arm(1), arm(1, held_back=["GM201", "GM202"]))
    assert held.status == "unfixed" and held.detail == "2 fixes not applied: need `--unsafe-fixes`"
    assert exit_code([held]) == 1 and "0 (2 need --unsafe-fixes)" in report.terminal([held], bench=False)
    assert TargetResult("t", arm(1), None, fixed_error="NameError: x").outputs_equal is False
    assert TargetResult("t", error="t: target: no factory").status == "error"
    assert exit_code([passing()]) == 0
    assert exit_code([passing(), worse]) == 1
    assert exit_code([worse, TargetResult("t", error="boom")]) == 2


def test_terminal_table_and_notes():
    result = passing()
    result.cold = ColdStarts((3.0, 3.4, 2.9), (1.5, 1.6, 1.4))
    out = report.terminal([result], bench=True)
    header, rule, row = out.splitlines()[:3]
    assert header.split()[:4] == ["target", "breaks", "fullgraph", "outputs"] and set(rule) <= {"-", " "}
    assert row.split()[1:7] == ["2", "->", "0", "fails", "->", "passes"]
    assert "equal" in row and "1/1" in row and "PASS" in row
    assert "3.0 [2.9-3.4] -> 1.5 [1.4-1.6]" in row and "5.00 -> 2.00" in row and "9.00" in row
    assert "  breaks: distinct graph-break sites Dynamo logged" in out and "  cold s: first compiled call" in out
    assert "cold start over 3 fresh processes per arm is outside noise" in out
    assert f"[fixed]: fixed {MODEL}: GM101" in out
    assert "missed by the linter" in out  # line 11 had no finding
    assert "Test CPU (2 cores)" in out and "torch 2.13.0" in out and "box Linux" in out


def test_cold_start_within_noise_is_said_so():
    result = passing()
    result.cold = ColdStarts((14.8, 16.4, 15.0), (16.4, 15.1, 14.9))
    assert "is within noise: the ranges overlap" in report.terminal([result], bench=True)
    assert result.bench_json()["cold_within_noise"] is True


def test_skipped_frames_are_loud():
    out = report.terminal([TargetResult("t", arm(1, skipped=["/p/model.py:3 f"]), arm(1))], bench=False)
    assert "WARNING: Dynamo skipped 1 frame(s) entirely" in out


def test_markdown_has_the_table_and_environment():
    text = report.markdown([passing(), TargetResult("t", arm(1), arm(1, equal=False))], bench=False)
    lines = text.splitlines()
    table = [line for line in lines if line.startswith("|")]
    assert len(table) == 4 and "max\\|diff\\|" in table[0]
    assert "- fullgraph: whether torch.compile(fullgraph=True) runs every input set" in lines
    assert "| DIFFER |" in table[3] and "FAIL" in table[3]
    assert "<details><summary>t</summary>" in text
    assert lines[-1].startswith("_machine: box Linux")


def test_json_schema(tmp_path):
    path = tmp_path / "out.json"
    report.write_json([passing()], path)
    (data,) = json.loads(path.read_text())
    assert {"target", "original", "fixed", "outputs_equal", "max_abs_diff", "reconciliation", "bench",
            "environment"} <= set(data)
    assert set(data["original"]) >= {"graph_count", "graph_break_count", "breaks", "skipped_frames", "logged_sites"}
    assert set(data["original"]["breaks"][0]) == {"reason", "gb_id", "filename", "line", "splits"}
    assert data["original"]["fullgraph"] == {"passes": False, "error": "Unsupported: branch"}
    assert data["fixes_applied"] == 1 and data["fixes_held_back"] == 0
    assert {"found", "missed", "confirmed", "not_a_break", "per_family"} <= set(data["reconciliation"])
    assert data["bench"]["device"] == "cpu"
    assert set(data["bench"]["original"]) >= {"cold_s", "cold_runs", "steady_ms", "p90_ms"}
    assert data["bench"]["eager_ms"] == 9.0
    assert data["environment"]["torch"] == "2.13.0"


def test_plot_writes_a_png(tmp_path):
    pytest.importorskip("matplotlib")
    from graphmend_lint.verify.plot import plot

    path = tmp_path / "chart.png"
    plot([passing()], path)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
