"""Regressions found by running the linter over large real code bases (benchmarks/field_trial.py)."""

from __future__ import annotations

import ast
import sysconfig
from collections import Counter
from pathlib import Path

import pytest

from graphmend_lint import fix_source, lint_source
from graphmend_lint.analysis.values import ValueOracle
from graphmend_lint.config import Settings

ARGPARSE = Path(sysconfig.get_paths()["stdlib"]) / "argparse.py"


def test_call_site_inference_runs_once_per_parameter(monkeypatch: pytest.MonkeyPatch) -> None:
    """stdlib argparse.py took minutes under ``--scope all``: parameters were re-inferred from
    their call sites exponentially often. Each (function, parameter) must be inferred once."""
    seen: Counter[tuple[int, str]] = Counter()
    original = ValueOracle._call_site_kinds

    def counting(self: ValueOracle, function, parameter):  # type: ignore[no-untyped-def]
        seen[(id(function), parameter)] += 1
        return original(self, function, parameter)

    monkeypatch.setattr(ValueOracle, "_call_site_kinds", counting)
    source = ARGPARSE.read_text()
    lint_source(source, str(ARGPARSE), Settings(scope="all"))
    assert seen, "argparse has call-site-typed parameters"
    assert max(seen.values()) == 1


def test_argparse_fix_parses_and_is_stable() -> None:
    settings = Settings(scope="all")
    fixed = fix_source(ARGPARSE.read_text(), str(ARGPARSE), settings, unsafe=True).source
    ast.parse(fixed)
    assert fix_source(fixed, str(ARGPARSE), settings, unsafe=True).source == fixed


def test_print_of_a_display_with_unpacking_is_not_deferred() -> None:
    """stdlib test_launcher.py: ``print([exe, *args])`` crashed the defer rewrite (GM201 internal error)."""
    source = "def report(x, args):\n    print([x, *args])\n    return x * 2\n"
    settings = Settings(scope="all")
    diagnostics = lint_source(source, "launcher.py", settings)
    assert [d.code for d in diagnostics] == ["GM201"]
    fixed = fix_source(source, "launcher.py", settings, unsafe=True).source
    ast.parse(fixed)
    assert "*args" in fixed
