"""The table and aggregation code of benchmarks/paper_table.py and benchmarks/hf_census.py, on synthetic verify JSON.

No Dynamo here: the scripts only read ``graphmend-lint verify --json``
objects, so these tests feed them hand-made ones shaped like
``TargetResult.to_json``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))

import hf_census
import paper_table
import verify_runs
from verify_runs import VerifyRun


def arm(graphs: int, breaks: int, explain: int | None = None, skipped: int = 0,
        fixes: dict[str, list[str]] | None = None) -> dict[str, Any]:
    return {"graph_count": graphs, "graph_break_count": breaks,
            "explain_break_count": graphs - 1 if explain is None else explain, "logged_sites": breaks,
            "breaks": [], "skipped_frames": ["f"] * skipped, "fixes": fixes or {}}


def result(before: dict[str, Any] | None, after: dict[str, Any] | None, *, status: str = "pass", detail: str = "",
           equal: bool | None = True, found: int = 0, missed: int = 0, outside: int = 0,
           bench: dict[str, Any] | None = None) -> dict[str, Any]:
    data: dict[str, Any] = {
        "target": "hf:x", "status": status, "detail": detail, "original": before, "fixed": after,
        "outputs_equal": equal, "environment": {"device_name": "test cpu"},
        "reconciliation": {"found": found, "missed": missed, "outside_scope": outside, "sites": [
            {"filename": "/t/modeling_x.py", "line": 7, "gb_id": "GB0124", "status": "missed"}] * missed},
    }
    if bench:
        data["bench"] = bench
    return data


def run_of(data: dict[str, Any] | None, returncode: int | None = 0) -> VerifyRun:
    return VerifyRun(["python", "-m", "graphmend_lint", "verify"], returncode, 1.0, data, "tail")


def entry(name: str, data: dict[str, Any] | None, returncode: int | None = 0) -> hf_census.Entry:
    run = run_of(data, returncode)
    return hf_census.Entry(name, "XModel", run, hf_census.classify(run))


@pytest.mark.parametrize(
    ("detail", "reason"),
    [
        ("the original arm timed out after 300s without a result:\n...", hf_census.TIMEOUT),
        ("hf:clip: no dummy inputs for main input 'foo'; write a factory target instead", hf_census.NO_INPUTS),
        ("hf:x: cannot build AutoModel for this config: nope", hf_census.CONFIG),
        ("hf:x: invalid config: bad", hf_census.CONFIG),
        ("factory failed: ImportError: XModel requires the timm library", hf_census.DEPENDENCY),
        ("factory failed: RuntimeError: size mismatch", hf_census.CONFIG),
        ("callable failed: IndexError: index out of range", hf_census.FORWARD),
        ("dynamo failed: InternalTorchDynamoError: boom", hf_census.VERIFY_ERROR),
    ],
)
def test_verify_errors_are_classified_by_their_detail(detail: str, reason: str) -> None:
    assert hf_census.classify(run_of(result(None, None, status="error", detail=detail, equal=None))) == reason


def test_measured_runs_are_not_skips_and_a_killed_run_is_a_timeout() -> None:
    assert hf_census.classify(run_of(result(arm(2, 1), arm(1, 0)))) is None
    assert hf_census.classify(run_of(result(arm(2, 1), None, status="fail", equal=False))) is None
    assert hf_census.classify(run_of(None, returncode=None)) == hf_census.TIMEOUT
    assert hf_census.classify(run_of(None, returncode=2)) == hf_census.VERIFY_ERROR


def test_aggregate_counts_breaks_skips_failures_and_recall() -> None:
    entries = [
        entry("a", result(arm(3, 2), arm(1, 0), found=2)),
        entry("b", result(arm(4, 2, skipped=1), arm(2, 1), found=1, missed=1, outside=3)),
        entry("c", result(arm(1, 0), arm(1, 0))),
        entry("d", result(arm(2, 1), arm(3, 2), status="fail", detail="more graph breaks")),
        entry("e", result(arm(2, 1), arm(1, 0), status="fail", equal=False)),
        entry("f", result(arm(2, 1), None, status="fail", equal=False)),
        entry("g", result(None, None, status="error", detail="callable failed: x", equal=None)),
        hf_census.Entry("h", None, skip=hf_census.NO_CLASS),
    ]
    total = hf_census.aggregate(entries)
    assert (total.enumerated, total.measured) == (8, 6)
    assert total.skipped == {hf_census.FORWARD: 1, hf_census.NO_CLASS: 1}
    assert (total.models_with_breaks, total.models_fixed_to_zero) == (5, 2)
    # f's fixed arm failed: it counts as removing nothing
    assert (total.breaks_before, total.breaks_after) == (7, 1 + 2 + 1)
    assert total.removed_percent == pytest.approx(100 * 3 / 7)
    assert (total.explain_before, total.explain_after) == (2 + 3 + 0 + 1 + 1 + 1, 0 + 1 + 0 + 2 + 0 + 1)
    assert (total.skipped_frames_before, total.skipped_frames_after) == (1, 0)
    assert total.outputs_equal_failures == ["e"] and total.fixed_code_fails == ["f"] and total.more_breaks == ["d"]
    assert (total.sites_found, total.sites_in_scope, total.sites_outside_scope) == (3, 4, 3)
    assert total.recall == pytest.approx(0.75)
    summary = hf_census.summary_table(total)
    assert "| splitting break sites before -> after" in summary and "7 -> 4 (43% removed)" in summary
    assert "3/4 (75%)" in summary
    assert any("linter missed modeling_x.py:7 GB0124" in line for line in hf_census.details(entries))
    rows = {row[0]: row for row in map(hf_census.model_row, entries)}
    assert rows["a"][2:6] == ["3 -> 1", "2 -> 0", "2 -> 0", "yes"] and rows["a"][-1] == "PASS"
    assert rows["f"][3] == "1 -> ?" and rows["f"][5] == "NO" and rows["g"][-1] == "skipped: " + hf_census.FORWARD


def test_an_empty_census_reports_no_percentages() -> None:
    total = hf_census.aggregate([])
    assert total.removed_percent is None and total.recall is None
    assert "0 -> 0 (- removed)" in hf_census.summary_table(total)


def test_select_keeps_the_order_of_only_marks_unknown_names_and_limits() -> None:
    types = [("bert", "BertModel"), ("clip_text", None), ("gpt2", "GPT2Model")]
    assert hf_census.select(types, None, 2) == types[:2]
    assert hf_census.select(types, "gpt2, nope,bert", None) == [
        ("gpt2", "GPT2Model"), ("nope", hf_census.UNKNOWN), ("bert", "BertModel")]
    skipped = hf_census.census_entry("nope", hf_census.UNKNOWN, None, Path("."))  # type: ignore[arg-type]
    assert skipped.skip == hf_census.UNKNOWN


def test_paper_row_compares_explain_breaks_with_the_paper() -> None:
    longformer = next(m for m in paper_table.MODELS if m.model_type == "longformer")
    bench = {"original": {"cold_s": 80.04, "steady_ms": 1.234}, "fixed": {"cold_s": 70.0, "steady_ms": 1.0}}
    cells = paper_table.row_cells(longformer, run_of(result(arm(6, 2), arm(4, 1, fixes={"f": ["GM202"]}),
                                                          bench=bench)))
    row = dict(zip(paper_table.HEADER, cells))
    assert row["graphs"] == "6 -> 4" and row["breaks (explain)"] == "5 -> 3" and row["splitting sites"] == "2 -> 1"
    assert row["logged sites"] == "2 -> 1"
    assert row["paper before -> after"] == "5 -> 2" and row["vs paper"] == "NO (3 > 2)"
    assert row["cold s"] == "80.0 -> 70.0" and row["steady ms"] == "1.23 -> 1.00" and row["fixes"] == "GM202"
    assert paper_table.versus_paper(longformer, {"explain_breaks": 1}, True) == "beats (1 < 2)"
    assert paper_table.versus_paper(longformer, {"explain_breaks": 1}, False) == "NO (outputs)"
    marian = next(m for m in paper_table.MODELS if m.model_type == "marian")
    assert paper_table.versus_paper(marian, {"explain_breaks": 0}, True) == "-"
    error = dict(zip(paper_table.HEADER, paper_table.row_cells(marian, run_of(None, returncode=2))))
    assert error["graphs"] == "-" and error["status"] == "NO RESULT" and error["cold s"] == "-"


def test_bench_arguments_follow_the_options() -> None:
    phi3 = next(m for m in paper_table.MODELS if m.model_type == "phi3")
    options = paper_table.parse_arguments(["--device", "cuda", "--mode", "reduce-overhead", "--threads", "0"])
    arguments = paper_table.verify_arguments(phi3, options)
    assert arguments[: len(phi3.arguments)] == list(phi3.arguments)
    assert ["--device", "cuda"] == arguments[len(phi3.arguments): len(phi3.arguments) + 2]
    assert "--bench" in arguments and "reduce-overhead" in arguments and "--threads" not in arguments
    assert "--bench" not in paper_table.verify_arguments(phi3, paper_table.parse_arguments(["--no-bench"]))


def test_cache_is_reused_only_for_the_same_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[list[str]] = []

    def fake_run(python: str, target: str, arguments: list[str], timeout_s: float) -> VerifyRun:
        calls.append(list(arguments))
        return VerifyRun(verify_runs.verify_command(python, target, arguments), 0, 2.0, {"status": "pass"})

    monkeypatch.setattr(verify_runs, "run_verify", fake_run)
    cache = tmp_path / "v" / "bert.json"
    first, cached = verify_runs.cached_verify(cache, "py", "hf:bert", ["--iters", "5"], 10)
    assert not cached and json.loads(cache.read_text())["result"] == {"status": "pass"}
    again, cached = verify_runs.cached_verify(cache, "py", "hf:bert", ["--iters", "5"], 10)
    assert cached and again == first and len(calls) == 1
    _, cached = verify_runs.cached_verify(cache, "py", "hf:bert", ["--iters", "6"], 10)
    assert not cached and len(calls) == 2
    _, cached = verify_runs.cached_verify(cache, "py", "hf:bert", ["--iters", "6"], 10, resume=False)
    assert not cached and len(calls) == 3
    cache.write_text(json.dumps({**json.loads(cache.read_text()), "host": "another-machine"}))
    _, cached = verify_runs.cached_verify(cache, "py", "hf:bert", ["--iters", "6"], 10)
    assert not cached and len(calls) == 4
