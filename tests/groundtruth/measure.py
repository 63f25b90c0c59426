"""Measure the real Dynamo graph breaks of the ground-truth programs.

Usage::

    python tests/groundtruth/measure.py [--check] [--reset-each] [-v] [PATH ...]

PATH may be a program file or a directory (its ``*.py`` files, sorted, are
measured; ``measure.py`` itself and ``__init__.py`` are skipped).  With no PATH
the ``programs/`` directory next to this script is measured.

Every program follows the corpus convention: it defines ``make()``, which
returns ``(eager_callable, input_sets)``.  For each program this script

1. imports the file from its path under a unique module name,
2. calls ``make()``,
3. runs ``torch._dynamo.explain(callable)(*args)`` for every input set, while
   capturing the ``graph_breaks`` logging artifact
   (``torch._logging.set_logs(graph_breaks=True)``; the records are emitted by
   the artifact logger ``torch._dynamo.symbolic_convert.__graph_breaks`` and
   caught by a handler on the ``torch._dynamo`` logger),
4. calls ``torch._dynamo.reset()`` (between programs; between input sets too
   with ``--reset-each``),

and prints the distinct ``(line, GB id, Gb_type)`` break sites.  The logging
artifact is the source of truth: ``explain()`` misses breaks (e.g. a break in
a ``for`` loop gives graph_count=0, graph_break_count=-1 and no reasons).

Classification of a site:

* ``control-flow``: GB0170 "Data-dependent branching" (Dynamo's
  ``generic_jump`` on a tensor), i.e. GM101..GM104 territory.
* ``bool-op``: GB0033 "Data dependent operator" raised by an op returning a
  Python bool/number from tensor data (``torch.equal``, ``torch.allclose``,
  ``torch.is_nonzero``).  It is reported at the call, not at the branch, and
  breaks even without any branch.
* ``other``: anything else (print, ``.item()``, nonzero, ...).

Expectations, from the file name:

* ``pos_*`` / ``bad_*``: at least one ``control-flow`` or ``bool-op`` site in
  the program file, and no ``other`` site.
* ``neg_*`` / ``good_*`` / ``fixed_*``: zero break records of any kind, in any
  file.

The ``# expect: GMxxx`` comments of a program are compared with the measured
control-flow/bool-op lines; a mismatch is flagged (documentation drift).

``--check`` makes the exit status non-zero when an expectation fails.
``--any-kind`` relaxes the positive check to "at least one break of any kind"
(for catalogs of non-control-flow rules, e.g. ``rules/GM301``).
"""

from __future__ import annotations

import argparse
import importlib.util
import logging
import os
import re
import sys
import time
import tokenize
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
DEFAULT_DIR = HERE / "programs"

_HEADER_RE = re.compile(r"^Graph break.*? in user code at (?P<file>.+):(?P<line>\d+)\s*$")
_GB_RE = re.compile(r"/gb/(gb\d+)\.html", re.IGNORECASE)
_EXPECT_RE = re.compile(r"#\s*expect:\s*(GM\d{3}(?:\s*,\s*GM\d{3})*)")

CONTROL_FLOW_IDS = {"GB0170"}
BOOL_OP_IDS = {"GB0033"}
POSITIVE_PREFIXES = ("pos_", "bad_")
NEGATIVE_PREFIXES = ("neg_", "good_", "fixed_")


@dataclass(frozen=True)
class Site:
    file: str
    line: int
    gb_id: str
    gb_type: str

    @property
    def kind(self) -> str:
        if self.gb_id in CONTROL_FLOW_IDS:
            return "control-flow"
        if self.gb_id in BOOL_OP_IDS:
            return "bool-op"
        return "other"


@dataclass
class Result:
    path: Path
    sites: set[Site] = field(default_factory=set)
    records: int = 0
    explain: list[tuple[int, int]] = field(default_factory=list)
    expected: dict[int, str] = field(default_factory=dict)
    error: str | None = None
    seconds: float = 0.0


class _Collector(logging.Handler):
    def __init__(self) -> None:
        super().__init__(level=logging.DEBUG)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        try:
            msg = record.getMessage()
        except Exception:  # pragma: no cover - defensive
            return
        if "Graph break" in msg and "in user code at" in msg:
            self.messages.append(msg)


def parse_record(msg: str) -> Site | None:
    lines = msg.splitlines()
    if not lines:
        return None
    m = _HEADER_RE.match(lines[0])
    if not m:
        return None
    gb = _GB_RE.search(msg)
    gb_id = gb.group(1).upper() if gb else "GB????"
    # Gb_type is the line right before "  Explanation:"; fall back to the
    # "Graph Break Reason:" line.
    gb_type = ""
    for i, ln in enumerate(lines):
        if ln.lstrip().startswith("Explanation:") and i > 0:
            j = i - 1
            while j > 0 and not lines[j].strip():
                j -= 1
            gb_type = lines[j].strip()
            if gb_type.startswith("Graph Break Reason:"):
                gb_type = gb_type.split(":", 1)[1].strip()
            break
    if not gb_type:
        for ln in lines:
            if ln.startswith("Graph Break Reason:"):
                gb_type = ln.split(":", 1)[1].strip()
                break
    return Site(os.path.realpath(m.group("file")), int(m.group("line")), gb_id, gb_type)


def expected_lines(path: Path) -> dict[int, str]:
    out: dict[int, str] = {}
    with open(path, "rb") as fh:
        for tok in tokenize.tokenize(fh.readline):
            if tok.type == tokenize.COMMENT:
                m = _EXPECT_RE.search(tok.string)
                if m:
                    out[tok.start[0]] = m.group(1).replace(" ", "")
    return out


def polarity(path: Path) -> str | None:
    name = path.name
    if name.startswith(POSITIVE_PREFIXES):
        return "pos"
    if name.startswith(NEGATIVE_PREFIXES):
        return "neg"
    return None


def load(path: Path, index: int):
    name = f"_gm_groundtruth_{index}_{re.sub(r'[^0-9a-zA-Z_]', '_', path.stem)}"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def measure(path: Path, index: int, collector: _Collector, reset_each: bool) -> Result:
    import torch

    res = Result(path=path, expected=expected_lines(path))
    t0 = time.perf_counter()
    torch._dynamo.reset()
    collector.messages.clear()
    try:
        module = load(path, index)
        fn, input_sets = module.make()
        for args in input_sets:
            if reset_each:
                torch._dynamo.reset()
            out = torch._dynamo.explain(fn)(*args)
            res.explain.append((out.graph_count, out.graph_break_count))
    except Exception as exc:  # report and keep going
        res.error = f"{type(exc).__name__}: {exc}".splitlines()[0]
    finally:
        for msg in collector.messages:
            site = parse_record(msg)
            if site is not None:
                res.sites.add(site)
        res.records = len(collector.messages)
        collector.messages.clear()
        torch._dynamo.reset()
    res.seconds = time.perf_counter() - t0
    return res


ANY_KIND = False  # set by --any-kind


def judge(res: Result) -> list[str]:
    """Return the list of problems (empty when the program is as expected)."""
    problems: list[str] = []
    if res.error:
        problems.append(f"error: {res.error}")
    pol = polarity(res.path)
    here = os.path.realpath(res.path)
    local = [s for s in res.sites if s.file == here]
    if pol == "neg":
        if res.sites or res.records:
            problems.append(f"negative program has {len(res.sites)} break site(s)")
        if any(breaks != 0 for _, breaks in res.explain):
            # -1 means Dynamo skipped the frame (or traced no tensor op at all)
            problems.append(f"negative program: explain() graph_break_count not 0: {res.explain}")
    elif pol == "pos":
        wanted = ("control-flow", "bool-op", "other") if ANY_KIND else ("control-flow", "bool-op")
        if not any(s.kind in wanted for s in local):
            problems.append("positive program has no control-flow break in its own file")
        if not ANY_KIND and any(s.kind == "other" for s in res.sites):
            problems.append("positive program has non-control-flow breaks")
        measured = {s.line for s in local if s.kind in wanted}
        documented = set(res.expected)
        if measured != documented:
            miss = sorted(measured - documented)
            extra = sorted(documented - measured)
            problems.append(
                f"'# expect:' comments drift: undocumented break lines {miss}, "
                f"documented but not measured {extra}"
            )
    if pol == "neg" and res.expected:
        problems.append("negative program carries '# expect:' comments")
    return problems


def collect_paths(args: list[str]) -> list[Path]:
    if not args:
        args = [str(DEFAULT_DIR)]
    out: list[Path] = []
    for a in args:
        p = Path(a)
        if p.is_dir():
            out.extend(
                q for q in sorted(p.rglob("*.py"))
                if q.name not in ("measure.py", "__init__.py", "conftest.py")
                and "__pycache__" not in q.parts
            )
        elif p.is_file():
            out.append(p)
        else:
            raise SystemExit(f"no such file or directory: {a}")
    return [p.resolve() for p in out]


def format_result(res: Result, root: Path) -> str:
    try:
        rel = res.path.relative_to(root)
    except ValueError:
        rel = res.path
    problems = judge(res)
    status = "OK  " if not problems else "FAIL"
    pol = polarity(res.path) or "?"
    lines = [
        f"{status} {pol:3} {rel}  explain(graphs,breaks)={res.explain}  "
        f"records={res.records}  ({res.seconds:.1f}s)"
    ]
    here = os.path.realpath(res.path)
    for s in sorted(res.sites, key=lambda s: (s.file != here, s.file, s.line, s.gb_id)):
        where = f"line {s.line}" if s.file == here else f"{s.file}:{s.line}"
        exp = res.expected.get(s.line) if s.file == here else None
        tag = f"  [expect: {exp}]" if exp else ""
        lines.append(f"       {where:>9}  {s.gb_id}  {s.kind:12}  {s.gb_type}{tag}")
    for p in problems:
        lines.append(f"       !! {p}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("paths", nargs="*")
    ap.add_argument("--check", action="store_true", help="non-zero exit if an expectation fails")
    ap.add_argument("--reset-each", action="store_true", help="torch._dynamo.reset() before every input set")
    ap.add_argument(
        "--any-kind", action="store_true",
        help="positives may break for any reason (for non-control-flow rule catalogs)",
    )
    ap.add_argument("-v", "--verbose", action="store_true", help="keep torch's own stderr log output")
    ns = ap.parse_args(argv)
    global ANY_KIND
    ANY_KIND = ns.any_kind

    import torch

    paths = collect_paths(ns.paths)
    torch._logging.set_logs(graph_breaks=True)
    if not ns.verbose:
        # set_logs installs a stderr handler on every registered torch logger
        # (torch._dynamo included, with propagate=False); keep only warnings.
        for name, lg in list(logging.Logger.manager.loggerDict.items()):
            if name.startswith("torch") and isinstance(lg, logging.Logger):
                for h in lg.handlers:
                    if isinstance(h, logging.StreamHandler) and h.level < logging.WARNING:
                        h.setLevel(logging.WARNING)
    collector = _Collector()
    dyn_logger = logging.getLogger("torch._dynamo")
    dyn_logger.addHandler(collector)

    root = Path.cwd()
    n_fail = 0
    counts = {"pos": [0, 0], "neg": [0, 0], "?": [0, 0]}
    print(f"# torch {torch.__version__}; {len(paths)} program(s)")
    for i, path in enumerate(paths):
        # The programs' __main__ blocks print; keep stdout clean of that.
        res = measure(path, i, collector, ns.reset_each)
        ok = not judge(res)
        pol = polarity(path) or "?"
        counts[pol][0] += 1
        counts[pol][1] += int(ok)
        n_fail += int(not ok)
        print(format_result(res, root), flush=True)
    print(
        f"# summary: pos {counts['pos'][1]}/{counts['pos'][0]} ok, "
        f"neg {counts['neg'][1]}/{counts['neg'][0]} ok"
        + (f", unclassified {counts['?'][0]}" if counts["?"][0] else "")
        + f", {n_fail} failing"
    )
    dyn_logger.removeHandler(collector)
    return 1 if (ns.check and n_fail) else 0


if __name__ == "__main__":
    sys.exit(main())
