"""benchmarks/catalog_breaks.py's rows, on hand-made worker answers (no Dynamo)."""

from __future__ import annotations

import sys
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))

import catalog_breaks  # noqa: E402

PROGRAM = Path("rules/GM201/bad_fstring.py")


def test_row_lists_logged_ids_and_those_the_rule_declares() -> None:
    answer = {"original": {"sites": [[5, "GB0059", "t"], [7, "GB0124", "t"]], "foreign_sites": [["torch/x.py", 3, "GB0007"]],
                           "error": None}}
    row = catalog_breaks._row(PROGRAM, answer, {"GM201": {"GB0059"}})
    assert row["logged"] == ["GB0007", "GB0059", "GB0124"]
    assert row["breaks"] is True
    assert row["declared"] == ["GB0059"]


def test_a_program_that_logs_nothing_is_reported_as_not_breaking() -> None:
    answer = {"original": {"sites": [], "foreign_sites": [], "error": None}}
    row = catalog_breaks._row(PROGRAM, answer, {"GM201": {"GB0059"}})
    assert (row["breaks"], row["declared"]) == (False, [])


def test_a_failed_measurement_is_neither_yes_nor_no() -> None:
    row = catalog_breaks._row(PROGRAM, {"failure": "timeout after 600 s"}, {})
    assert row["breaks"] is None and row["note"] == "timeout after 600 s"
