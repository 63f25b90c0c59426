"""Would turning Dynamo's capture settings on be a fix for host-sync and data-dependent-shape breaks?

GM301 (``.item()``), GM302 (``.tolist()``), GM401 (``nonzero``, masks) and
GM402 (tensor slice bounds) mostly decline to fix: the value is used as a
Python number. Dynamo has two switches that trace those ops instead of
breaking, ``capture_scalar_outputs`` and ``capture_dynamic_output_shape_ops``.
A fix could write them at the top of the module, as GM501's ``allow_rnn`` fix
does. This measures what that would do, before anyone builds it: every dev
corpus program with a finding of those rules is measured as it is and with
both switches written after its imports (a copy in a temporary folder), with
the corpus harness's own measurement (logged sites, ``fullgraph=True``, eager
outcomes).

The question it answers is whether logged sites and ``fullgraph`` move
together. If they do not, the switches are turning logged breaks into
compile-time errors (a data-dependent guard) that Dynamo does not log as
graph breaks, and the logged-site count would overstate the fix.

Run from the repository root (dev split only; never the held-out one)::

    python benchmarks/capture_settings_trial.py --json capture.json
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from graphmend_lint import lint_source  # noqa: E402
from graphmend_lint.config import Settings  # noqa: E402
from tests.corpus.dynamo import Measurement, measure  # noqa: E402

DEV = REPO / "tests" / "corpus" / "programs" / "dev"
HOST_SYNC_CODES = frozenset({"GM301", "GM302", "GM401", "GM402"})
SWITCHES = (
    "torch._dynamo.config.capture_scalar_outputs = True\n"
    "torch._dynamo.config.capture_dynamic_output_shape_ops = True\n"
)


def with_switches(source: str) -> str:
    """*source* with both switches written right after its last top-level import."""
    tree = ast.parse(source)
    after = max((node.end_lineno or 0 for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom))), default=0)
    lines = source.splitlines(keepends=True)
    return "".join(lines[:after]) + SWITCHES + "".join(lines[after:])


def passes_fullgraph(measurement: Measurement) -> bool:
    return bool(measurement.fullgraph) and all(failure is None for failure in measurement.fullgraph)


def trial(path: Path, workdir: Path) -> dict[str, Any]:
    """One program measured as it is and with the switches on."""
    switched = workdir / path.name
    switched.write_text(with_switches(path.read_text(encoding="utf-8")), encoding="utf-8")
    before = measure(path, "capture_trial_before", behaviour=True)
    after = measure(switched, "capture_trial_after", behaviour=True)
    return {
        "program": path.stem,
        "sites": [len(before.sites), len(after.sites)],
        "fullgraph": [passes_fullgraph(before), passes_fullgraph(after)],
        "fullgraph_failure_after": next((failure for failure in after.fullgraph if failure), None),
        "error_after": after.error,
    }


def summary(rows: list[dict[str, Any]]) -> str:
    sites = [sum(row["sites"][arm] for row in rows) for arm in (0, 1)]
    passing = [sum(row["fullgraph"][arm] for row in rows) for arm in (0, 1)]
    to_zero = [row for row in rows if row["sites"][0] and not row["sites"][1]]
    to_zero_failing = sum(1 for row in to_zero if not row["fullgraph"][1])
    more = sum(1 for row in rows if row["sites"][1] > row["sites"][0])
    return "\n".join([
        f"programs: {len(rows)} (dev, with a {'/'.join(sorted(HOST_SYNC_CODES))} finding)",
        f"logged sites: {sites[0]} -> {sites[1]}",
        f"fullgraph passes: {passing[0]} -> {passing[1]}",
        f"programs going to 0 logged sites: {len(to_zero)}, of which still failing fullgraph: {to_zero_failing}",
        f"programs with more logged sites: {more}",
    ])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, help="write one row per program here")
    parser.add_argument("--only", nargs="*", default=(), help="program stems to measure (default: every match)")
    args = parser.parse_args(argv)
    programs = [
        path for path in sorted(DEV.glob("*.py"))
        if (not args.only or path.stem in args.only)
        and any(d.code in HOST_SYNC_CODES for d in lint_source(path.read_text(encoding="utf-8"), str(path), Settings()))
    ]
    rows = []
    with tempfile.TemporaryDirectory() as workdir:
        for number, path in enumerate(programs, 1):
            rows.append(trial(path, Path(workdir)))
            print(f"[{number}/{len(programs)}] {path.stem}: {rows[-1]['sites'][0]} -> {rows[-1]['sites'][1]}", file=sys.stderr)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1), encoding="utf-8")
    print(summary(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
