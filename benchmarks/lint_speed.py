"""Lint speed: graphmend-lint cold and cached, against peers, on big real code bases.

Prints a table and writes JSON (``--json``). Each run is a fresh subprocess,
timed by wall clock, with its peak resident memory read from ``getrusage`` of
the children. Examples::

    python benchmarks/lint_speed.py --corpus transformers --scope modules --jobs 2
    python benchmarks/lint_speed.py --corpus transformers torch --scope modules all --jobs 1 2 --peers

TorchFix needs an older libcst, so give it its own venv
(``python -m venv /tmp/peers && /tmp/peers/bin/pip install torchfix``) and
pass ``--peer-python /tmp/peers/bin/python``. ``CPU s`` is the user+system
time of the whole process tree: on a shared machine it moves less than wall
time does.

The cache check of issue 2 is the ratio of the cold and warm rows.
"""

from __future__ import annotations

import argparse
import datetime
import importlib.util
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path


@dataclass
class Row:
    tool: str
    corpus: str
    scope: str
    jobs: int
    cache: str
    files: int
    lines: int
    seconds: float
    peak_mb: float
    cpu_seconds: float
    exit_code: int

    @property
    def lines_per_second(self) -> float:
        return self.lines / self.seconds if self.seconds else 0.0


def corpus_path(name: str) -> Path:
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit(f"corpus {name!r} is not installed")
    return Path(next(iter(spec.submodule_search_locations)))


def count(path: Path) -> tuple[int, int]:
    files = list(path.rglob("*.py"))
    lines = sum(f.read_bytes().count(b"\n") for f in files)
    return len(files), lines


# Runs the command and prints its process tree's peak RSS (KB) and CPU seconds.
# A fresh wrapper per command: RUSAGE_CHILDREN of this script only ever grows,
# so reading it here would give every later row the biggest earlier peak.
_MEASURE = (
    "import resource, subprocess, sys; "
    "code = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode; "
    "usage = resource.getrusage(resource.RUSAGE_CHILDREN); "
    "print(usage.ru_maxrss, usage.ru_utime + usage.ru_stime, code)"
)


def timed(command: list[str], cwd: Path) -> tuple[float, float, float, int]:
    """Wall seconds, peak RSS of the largest process (MB), CPU seconds of all processes, exit code."""
    start = time.perf_counter()
    completed = subprocess.run([sys.executable, "-c", _MEASURE, *command], cwd=cwd, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    peak_kb, cpu, code = completed.stdout.split()
    return seconds, int(peak_kb) / 1024, float(cpu), int(code)


def graphmend_rows(name: str, path: Path, scope: str, jobs: int, files: int, lines: int) -> list[Row]:
    rows = []
    with tempfile.TemporaryDirectory() as workdir:
        (Path(workdir) / "pyproject.toml").write_text("[tool.graphmend-lint]\n")
        command = [sys.executable, "-m", "graphmend_lint", str(path), "--scope", scope, "--jobs", str(jobs),
                   "--output-format", "json", "--exit-zero"]
        for cache in ("cold", "warm"):
            seconds, peak, cpu, code = timed(command, Path(workdir))
            rows.append(Row("graphmend-lint", name, scope, jobs, cache, files, lines, seconds, peak, cpu, code))
    return rows


def _has_module(python: str, module: str) -> bool:
    return subprocess.run([python, "-c", f"import {module}"], capture_output=True).returncode == 0


PEERS = ("ruff", "pylint", "torchfix")


def peer_rows(name: str, path: Path, files: int, lines: int, peer_python: str, wanted: list[str]) -> list[Row]:
    """ruff, pylint (astroid inference only) and flake8 with TorchFix, each where installed.

    TorchFix pins an older libcst than graphmend-lint, so it usually lives in
    its own venv: ``--peer-python`` names that interpreter.
    """
    peers = {
        "ruff": (shutil.which("ruff") is not None,
                 ["ruff", "check", "--no-cache", "--exit-zero", "--select", "ALL", str(path)]),
        "pylint (no-member)": (_has_module(sys.executable, "pylint"),
                               [sys.executable, "-m", "pylint", "--disable=all", "--enable=no-member", "--jobs=2",
                                "--exit-zero", str(path)]),
        "flake8+torchfix": (_has_module(peer_python, "torchfix"),
                            [peer_python, "-m", "flake8", "--select=TOR", "--exit-zero", "-j", "2", str(path)]),
    }
    rows = []
    for tool, (installed, command) in peers.items():
        if not any(tool.startswith(w) or w in tool for w in wanted):
            continue
        if not installed:
            print(f"{tool}: not installed, skipped", flush=True)
            continue
        # Not from site-packages: flake8 would load every plugin installed there
        # (graphmend-lint's own included) from the current directory.
        with tempfile.TemporaryDirectory() as workdir:
            seconds, peak, cpu, code = timed(command, Path(workdir))
        rows.append(Row(tool, name, "-", 2, "cold", files, lines, seconds, peak, cpu, code))
        print(table(rows[-1:]).splitlines()[-1], flush=True)
    return rows


def table(rows: list[Row]) -> str:
    header = "| tool | corpus | scope | jobs | cache | files | lines | wall s | lines/s | CPU s | peak MB |"
    lines = [header, "|" + "---|" * 11]
    for r in rows:
        lines.append(
            f"| {r.tool} | {r.corpus} | {r.scope} | {r.jobs} | {r.cache} | {r.files} | {r.lines} | "
            f"{r.seconds:.1f} | {r.lines_per_second:,.0f} | {r.cpu_seconds:.1f} | {r.peak_mb:.0f} |"
            + (f" FAILED (exit {r.exit_code})" if r.exit_code else "")
        )
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", nargs="+", default=["transformers"])
    parser.add_argument("--scope", nargs="*", default=["modules"], help="graphmend-lint scopes (none: peers only)")
    parser.add_argument("--jobs", nargs="+", type=int, default=[2])
    parser.add_argument("--peers", nargs="*", choices=PEERS, help="also time these peers (all when none is named)")
    parser.add_argument("--peer-python", default=sys.executable,
                        help="interpreter with flake8 and torchfix (e.g. /tmp/peers/bin/python)")
    parser.add_argument("--json", type=Path, help="write the rows here")
    args = parser.parse_args()
    rows: list[Row] = []
    for name in args.corpus:
        path = corpus_path(name)
        files, lines = count(path)
        for scope in args.scope:
            for jobs in args.jobs:
                rows.extend(graphmend_rows(name, path, scope, jobs, files, lines))
                print(table(rows[-2:]).splitlines()[-1], flush=True)
        if args.peers is not None:
            rows.extend(peer_rows(name, path, files, lines, args.peer_python, args.peers or list(PEERS)))
    print()
    print(f"{datetime.date.today()} {platform.node()} {platform.processor() or platform.machine()} "
          f"cpus={os.cpu_count()} python={platform.python_version()}")
    print(table(rows))
    if args.json:
        args.json.write_text(json.dumps([asdict(r) | {"lines_per_second": r.lines_per_second} for r in rows], indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
