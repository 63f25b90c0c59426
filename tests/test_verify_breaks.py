"""Splitting vs merely logged break sites (real Dynamo, in process).

A site splits when compiled graphs with ops run on both sides of it, or
when it made Dynamo skip its frame. Expected lines are tagged in the
programs: ``# SPLIT`` (logged and splitting) and ``# LOGGED`` (logged only).
"""

from __future__ import annotations

import importlib.util
import textwrap
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from graphmend_lint.verify.breaks import capture_breaks, capture_breaks_over  # noqa: E402

pytestmark = pytest.mark.dynamo
X = torch.ones(8)


def load(tmp_path: Path, source: str):
    path = tmp_path / "prog.py"
    path.write_text(textwrap.dedent(source))
    spec = importlib.util.spec_from_file_location(f"split_{tmp_path.name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module, path


def tagged(path: Path, tag: str) -> set[int]:
    return {n for n, line in enumerate(path.read_text().splitlines(), 1) if line.rstrip().endswith(f"# {tag}")}


def lines(sites) -> set[int]:
    return {s.line for s in sites}


@pytest.mark.parametrize(
    "source",
    [
        # after the last tensor op: explain sees 1 graph, 0 breaks, yet Dynamo logs GB0059
        """
        def f(x):
            y = x * 2
            y = y + 1
            print("done")  # LOGGED
            return y
        """,
        # before the first tensor op: the graph before it is empty
        """
        def f(x):
            print("start")  # LOGGED
            y = x * 2
            return y + 1
        """,
        # between two ops: a real split
        """
        def f(x):
            y = x * 2
            print("mid")  # SPLIT
            return y + 1
        """,
        # two in a row between ops: each one alone would split, so both count
        """
        def f(x):
            y = x * 2
            print("first")  # SPLIT
            print("second")  # SPLIT
            return y + 1
        """,
        # a data-dependent branch whose sides do no tensor work
        """
        def f(x):
            y = x * 2
            if y.sum() > 0:  # LOGGED
                return y
            return y
        """,
        # a break in a loop skips the whole frame: worse than a split, always counted
        """
        def f(x):
            y = x * 2
            for i in range(2):
                print(i)  # SPLIT
            return y
        """,
        # at the end of a helper: the helper's ops and the caller's ops are separate graphs
        """
        def helper(y):
            y = y + 1
            print("in helper")  # SPLIT
            return y

        def f(x):
            return helper(x * 2)
        """,
    ],
    ids=["epilogue", "prologue", "middle", "two-in-a-row", "branch-no-work", "loop", "helper-end"],
)
def test_splitting_sites(tmp_path, source):
    mod, path = load(tmp_path, source)
    report = capture_breaks(mod.f, X)
    assert lines(report.sites) == tagged(path, "SPLIT") | tagged(path, "LOGGED")
    assert lines(report.splitting_sites) == tagged(path, "SPLIT")
    assert report.splitting_count == len(tagged(path, "SPLIT"))


def test_epilogue_print_agrees_with_explain(tmp_path):
    mod, _ = load(tmp_path, """
        def f(x):
            y = x * 2
            print("done")
            return y
    """)
    report = capture_breaks(mod.f, X)
    assert (report.graph_count, report.explain_break_count, report.break_count, report.splitting_count) == (1, 0, 1, 0)


def test_over_inputs_merges_splitting_sites_and_reseeds(tmp_path):
    mod, path = load(tmp_path, """
        import torch

        def f(x):
            y = x * 2
            if y.sum() > 0:  # SPLIT
                print("pos")  # SPLIT
                return y + torch.rand(1)
            return y - 1
    """)
    seeds = []
    report = capture_breaks_over(mod.f, [((X,), {}), ((-X,), {})], before_each=lambda: seeds.append(1))
    assert lines(report.splitting_sites) == tagged(path, "SPLIT")
    assert seeds == [1, 1]


def test_breaks_inside_the_standard_library_are_sited_at_each_calling_line(tmp_path):
    """Module-level ``logging.debug`` breaks (GB4841) inside ``logging/__init__.py``, at one line for
    every caller, and Dynamo logs the second caller's break without a user stack unless told not to."""
    mod, path = load(tmp_path, """
        import logging

        def g(x):
            logging.debug("g %s", x.shape)  # LOGGED
            return x + 1

        def f(x):
            x = g(x)
            logging.debug("f %s", x.shape)  # SPLIT
            return x * 2
    """)
    report = capture_breaks(mod.f, X)
    assert {(s.filename, s.line) for s in report.sites} == {(str(path), n) for n in tagged(path, "LOGGED") | tagged(path, "SPLIT")}
    assert lines(report.splitting_sites) == tagged(path, "SPLIT")
