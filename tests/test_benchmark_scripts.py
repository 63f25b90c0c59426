"""The table code of benchmarks/paper_table.py and the shared verify_runs.py, on synthetic verify JSON.

The census scripts have their own tests (test_census_scripts.py).

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

    def fake_run(python: str, target: str, arguments: list[str], timeout_s: float, unsafe: bool = True) -> VerifyRun:
        calls.append(list(arguments))
        return VerifyRun(verify_runs.verify_command(python, target, arguments, unsafe), 0, 2.0, {"status": "pass"})

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
    _, cached = verify_runs.cached_verify(cache, "py", "hf:bert", ["--iters", "6"], 10, unsafe=False)
    assert not cached and len(calls) == 5  # safe fixes only is another command


def test_a_relative_venv_gives_an_absolute_interpreter(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """CI passes ``--venv .ci-tf452``; verify then runs the interpreter from another directory."""
    (tmp_path / "env" / "bin").mkdir(parents=True)
    (tmp_path / "env" / "bin" / "python").write_text("")
    monkeypatch.chdir(tmp_path)
    assert paper_table.ensure_venv(Path("env"), create=False) == str(tmp_path / "env" / "bin" / "python")


def test_the_current_environment_also_gates_breaking_models_of_the_installed_release() -> None:
    paper = [m.model_type for m in paper_table.selected_models(None, paper_table.PAPER_TRANSFORMERS)]
    current = [m.model_type for m in paper_table.selected_models(None, "current")]
    assert paper == [m.model_type for m in paper_table.MODELS]
    assert current[: len(paper)] == paper and {"ctrl", "xlm", "reformer"} <= set(current[len(paper):])
    assert [m.model_type for m in paper_table.selected_models("ctrl,t5", "4.52.4")] == ["t5"]
    with pytest.raises(SystemExit, match="unknown model"):
        paper_table.selected_models("nope", "current")
