"""GM201-GM204 against real Dynamo: the catalog programs before and after the fix.

For every ``rules/GM20x/bad_*.py``: Dynamo breaks where the rules say, with an
id the rule claims. For every ``fixed_*.py`` twin (``fix_source`` of the bad
program, checked in ``test_side_effects.py``):

* one graph, and nothing that splits it outside the epilogue: a side effect
  that runs after the last tensor op is still *logged* by Dynamo as a break
  (measured), so the assertion is that every remaining logged site, every
  splitting site and every skipped frame lies on the epilogue's lines (the
  statements right before a ``return``), never that the log is empty;
* the EAGER runs of both programs print the same text, emit the same log
  records and warnings in the same order, and return identical tensors, on
  every input set (the sets take every branch).

Break sites were measured with ``graphmend_lint.verify.breaks`` on torch 2.13 CPU.
"""

from __future__ import annotations

import ast
import contextlib
import importlib.util
import io
import itertools
import logging
import os
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

torch = pytest.importorskip("torch")

from graphmend_lint import lint_source
from graphmend_lint.rules import rule_by_code
from graphmend_lint.verify.breaks import BreakReport, capture_breaks_over

pytestmark = pytest.mark.dynamo

CATALOG = Path(__file__).resolve().parents[1] / "rules"
_COUNTER = itertools.count()


@dataclass(frozen=True)
class Measured:
    """Dynamo's breaks in one bad program's own file: ``(line, GB id)``, and whether a frame ran eagerly."""

    sites: frozenset[tuple[int, str]]
    frame_skipped: bool = False


def measured(*sites: tuple[int, str], frame_skipped: bool = False) -> Measured:
    return Measured(frozenset(sites), frame_skipped)


BAD: dict[str, Measured] = {
    "GM201/bad_plain.py": measured((7, "GB0059")),
    "GM201/bad_conditional.py": measured((14, "GB0059")),
    # a break in a loop: Dynamo gives up on the whole forward
    "GM201/bad_loop.py": measured((15, "GB0059"), frame_skipped=True),
    "GM201/bad_returns.py": measured((7, "GB0059"), (9, "GB0059"), (13, "GB0059")),
    "GM201/bad_mutated.py": measured((7, "GB0059")),
    "GM201/bad_helper.py": measured((11, "GB0059")),
    "GM201/bad_fstring.py": measured((7, "GB0059"), (7, "GB0124")),
    "GM202/bad_logger.py": measured((18, "GB0291")),
    "GM202/bad_warning_once.py": measured((24, "GB0291")),
    "GM202/bad_warnings_warn.py": measured((10, "GB0007")),
    "GM202/bad_self_logger.py": measured((16, "GB0291")),
    # `logging.info` breaks inside logging itself (GB4841); the loop makes Dynamo skip the frame
    "GM202/bad_logging_loop.py": measured(frame_skipped=True),
    "GM203/bad_stdout_write.py": measured((9, "GB0156"), (10, "GB0156")),
    # GB0142: Dynamo cannot enter the file object as a context manager
    "GM203/bad_open.py": measured((9, "GB0059"), (9, "GB0142"), frame_skipped=True),
    "GM204/bad_perf_counter.py": measured((9, "GB0007"), (11, "GB0007")),
    "GM204/bad_random.py": measured((9, "GB0007")),
    "GM204/bad_datetime.py": measured((9, "GB0156")),
}


def programs(prefix: str) -> list[Path]:
    return sorted(CATALOG.glob(f"GM20[1-4]/{prefix}_*.py"))


def relative(path: Path) -> str:
    return path.relative_to(CATALOG).as_posix()


def load(path: Path) -> ModuleType:
    """A fresh import under a unique name: new loggers, empty ``warning_once`` caches."""
    name = f"gm_side_effects_{path.stem}_{next(_COUNTER)}"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def measure(path: Path) -> BreakReport:
    fn, inputs = load(path).make()
    with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return capture_breaks_over(fn, [(tuple(args), {}) for args in inputs])


def own(report_sites: Any, path: Path) -> set[tuple[int, str]]:
    target = os.path.realpath(path)
    return {(s.line, s.gb_id) for s in report_sites if os.path.realpath(s.filename) == target}


def epilogue_lines(path: Path) -> set[int]:
    """Lines of the expression statements (and ``if <flag>:`` blocks of them) ending a block before a return.

    Written on the stdlib ``ast``, independently of the linter's own recognition.
    """
    lines: set[int] = set()

    def replay(statement: ast.stmt) -> bool:
        if isinstance(statement, ast.If):
            return isinstance(statement.test, ast.Name) and not statement.orelse and all(map(replay, statement.body))
        return isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call)

    def visit(block: list[ast.stmt], function_body: bool) -> None:
        ends_with_return = bool(block) and isinstance(block[-1], ast.Return)
        if ends_with_return or function_body:
            index = len(block) - 1 if ends_with_return else len(block)
            while index > 0 and replay(block[index - 1]):
                index -= 1
                lines.update(range(block[index].lineno, (block[index].end_lineno or block[index].lineno) + 1))
        for statement in block:
            for field in ("body", "orelse", "finalbody"):
                inner = getattr(statement, field, None)
                if isinstance(inner, list) and inner and isinstance(inner[0], ast.stmt):
                    visit(inner, isinstance(statement, ast.FunctionDef) and field == "body")

    visit(ast.parse(path.read_text()).body, False)
    return lines


@dataclass
class Observed:
    """What one eager call did that a user can see."""

    stdout: str
    records: list[tuple[str, str]]
    warned: list[tuple[type, str]]
    output: Any


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[tuple[str, str]] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append((record.levelname, record.getMessage()))


@contextlib.contextmanager
def root_logging() -> Iterator[_Records]:
    """Every record that reaches the root logger, whatever the level configured."""
    root = logging.getLogger()
    handler, level = _Records(), root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    try:
        yield handler
    finally:
        root.removeHandler(handler)
        root.setLevel(level)


def run_eager(path: Path) -> list[Observed]:
    """Each input set's output, with what it printed, logged and warned.

    ``torch.set_warn_always`` turns torch's once-per-process warnings (e.g.
    formatting a tensor that requires grad) into per-call ones, so both
    programs of a pair see them.
    """
    fn, inputs = load(path).make()
    observed = []
    warn_always = torch.is_warn_always_enabled()
    torch.set_warn_always(True)
    try:
        for args in inputs:
            observed.append(_observe(fn, args))
    finally:
        torch.set_warn_always(warn_always)
    return observed


def _observe(fn: Any, args: tuple[Any, ...]) -> Observed:
    stdout = io.StringIO()
    with root_logging() as log, warnings.catch_warnings(record=True) as warned, contextlib.redirect_stdout(stdout):
        warnings.simplefilter("always")
        output = fn(*args)
    return Observed(stdout.getvalue(), log.records, [(w.category, str(w.message)) for w in warned], output)


def assert_same_tensors(left: Any, right: Any) -> None:
    if isinstance(left, torch.Tensor):
        assert isinstance(right, torch.Tensor) and torch.equal(left, right)
    elif isinstance(left, (tuple, list)):
        assert type(left) is type(right) and len(left) == len(right)
        for a, b in zip(left, right):
            assert_same_tensors(a, b)
    else:
        assert left == right


# -- the tests ----------------------------------------------------------------------------


def test_every_bad_program_is_measured() -> None:
    assert {relative(p) for p in programs("bad")} == set(BAD)


@pytest.mark.parametrize("path", programs("bad"), ids=relative)
def test_bad_program_breaks_where_flagged(path: Path) -> None:
    expected = BAD[relative(path)]
    report = measure(path)
    assert own(report.sites, path) == expected.sites
    assert bool(report.skipped_frames) == expected.frame_skipped
    assert report.splitting_count >= 1 or report.skipped_frames, "the program must really lose graphs"
    for diagnostic in lint_source(path.read_text(), str(path)):
        rule = rule_by_code(diagnostic.code)
        ids = {gb for line, gb in expected.sites if line == diagnostic.start.line}
        if diagnostic.code.startswith("GM20") and ids:
            assert ids & set(rule.dynamo_gb), f"{diagnostic.code} line {diagnostic.start.line}: Dynamo says {ids}"


@pytest.mark.parametrize("path", programs("fixed"), ids=relative)
def test_fix_leaves_one_graph_and_breaks_only_in_the_epilogue(path: Path) -> None:
    report = measure(path)
    epilogue = epilogue_lines(path)
    assert report.graph_count == 1
    assert {line for line, _ in own(report.sites, path)} <= epilogue
    assert {line for line, _ in own(report.splitting_sites, path)} <= epilogue
    foreign_splits = {s for s in report.splitting_sites if os.path.realpath(s.filename) != os.path.realpath(path)}
    assert not foreign_splits
    for frame in report.skipped_frames:  # only the replay's own lambda, which holds no tensor op
        filename, _, rest = frame.rpartition(":")
        assert os.path.realpath(filename) == os.path.realpath(path) and int(rest.split()[0]) in epilogue, frame


@pytest.mark.parametrize("path", programs("fixed"), ids=relative)
def test_eager_behaviour_is_unchanged(path: Path) -> None:
    bad = path.with_name(path.name.replace("fixed_", "bad_", 1))
    before, after = run_eager(bad), run_eager(path)
    assert len(before) == len(after)
    assert any(o.stdout or o.records or o.warned for o in before), "the program must print, log or warn"
    for old, new in zip(before, after):
        assert new.stdout == old.stdout
        assert new.records == old.records
        assert new.warned == old.warned
        assert_same_tensors(old.output, new.output)
