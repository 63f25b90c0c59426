"""Lint cost on pathological inputs: does it grow linearly with file size and compiled functions?

Each case generates one Python file at several sizes and lints it cold in a
fresh process (``python -m graphmend_lint FILE --no-cache``), reading wall
time, CPU time (user + system, steadier than wall time on a shared machine)
and the peak resident memory of the process. Doubling the size should about
double the time; ``CPU x prev`` is the ratio to the previous size of the same
case. Examples::

    python benchmarks/pathological.py                      # every case, default sizes
    python benchmarks/pathological.py --case many-functions --sizes 250 500 1000
    python benchmarks/pathological.py --keep /tmp/patho    # keep the generated files

The cases (each ``N`` is the size parameter):

* ``many-functions``: N ``@torch.compile`` functions, each calling its own
  helper, with a tensor branch, a print and an ``.item()`` (issue 16 §7).
* ``huge-class``: one ``nn.Module`` with N submodules and N methods, all
  called from ``forward``.
* ``deep-helpers``: a compiled function whose helpers call each other N deep,
  a print at every level.
* ``long-chains``: a compiled function with N statements, each a chain of
  twenty tensor method calls and a sum of twenty operands.
* ``big-file``: N uncompiled functions (about 12 lines each) and one compiled
  function: the cost of a file that is mostly out of scope.
* ``many-modules``: N ``nn.Module`` classes, each used by the next, under
  ``--scope modules``.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from lint_speed import timed

HEADER = ["import logging", "", "import torch", "from torch import nn", "", "logger = logging.getLogger(__name__)", ""]


def many_functions(n: int) -> str:
    lines = list(HEADER)
    for i in range(n):
        lines += [
            f"def helper_{i}(x):",
            f"    return x * {i + 1}",
            "",
            "",
            "@torch.compile",
            f"def step_{i}(x, y):",
            f"    z = helper_{i}(x) + y",
            "    if z.sum() > 0:",
            "        print('positive', z.shape)",
            "    n = z.max().item()",
            "    return z * n",
            "",
            "",
        ]
    return "\n".join(lines)


def huge_class(n: int) -> str:
    lines = [*HEADER, "class Huge(nn.Module):", "    def __init__(self):", "        super().__init__()"]
    lines += [f"        self.layer_{i} = nn.Linear(8, 8)" for i in range(n)]
    lines += ["", "    def forward(self, x):"]
    lines += [f"        x = self.part_{i}(x)" for i in range(n)]
    lines += ["        return x", ""]
    for i in range(n):
        lines += [
            f"    def part_{i}(self, x):",
            f"        h = self.layer_{i}(x)",
            "        if h.mean() > 0:",
            f"            logger.info('part {i} %s', h.shape)",
            "        return h.relu()",
            "",
        ]
    lines += ["", "model = torch.compile(Huge())", ""]
    return "\n".join(lines)


def deep_helpers(n: int) -> str:
    lines = list(HEADER)
    for i in range(n):
        call = f"level_{i + 1}(x * 2)" if i + 1 < n else "x.relu()"
        lines += [f"def level_{i}(x):", f"    print('level {i}')", f"    return {call}", "", ""]
    lines += ["@torch.compile", "def entry(x):", "    return level_0(x)", ""]
    return "\n".join(lines)


def long_chains(n: int) -> str:
    chain = "".join(".add(1).mul(2)" for _ in range(10))
    total = " + ".join(f"y{j % 3}" for j in range(20))
    lines = [*HEADER, "@torch.compile", "def entry(x):", "    y0 = y1 = y2 = x"]
    for i in range(n):
        lines += [f"    y{i % 3} = x{chain}", f"    x = {total}"]
    lines += ["    if x.sum() > 0:", "        print('done')", "    return x", ""]
    return "\n".join(lines)


def big_file(n: int) -> str:
    lines = list(HEADER)
    for i in range(n):
        lines += [
            f"def unused_{i}(x, flag=False):",
            "    total = 0",
            "    for item in range(10):",
            "        if flag and item % 2:",
            "            total += item * x",
            "        else:",
            "            total -= item",
            f"    print('unused {i}', total)",
            "    return total",
            "",
            "",
        ]
    lines += ["@torch.compile", "def entry(x):", "    if x.sum() > 0:", "        print('hi')", "    return x", ""]
    return "\n".join(lines)


def many_modules(n: int) -> str:
    lines = list(HEADER)
    for i in range(n):
        inner = f"self.inner = Block{i - 1}()" if i else "self.inner = nn.Linear(8, 8)"
        lines += [
            f"class Block{i}(nn.Module):",
            "    def __init__(self):",
            "        super().__init__()",
            f"        {inner}",
            "",
            "    def forward(self, x):",
            "        h = self.inner(x)",
            "        if h.sum() > 0:",
            "            h = h * 2",
            "        return h",
            "",
            "",
        ]
    return "\n".join(lines)


@dataclass(frozen=True)
class Case:
    name: str
    generate: Callable[[int], str]
    sizes: tuple[int, ...]
    scope: str = "compiled"


CASES = (
    Case("many-functions", many_functions, (500, 1000, 2000)),
    Case("huge-class", huge_class, (500, 1000, 2000)),
    Case("deep-helpers", deep_helpers, (100, 200, 400)),
    Case("long-chains", long_chains, (250, 500, 1000)),
    Case("big-file", big_file, (2500, 5000, 10000)),
    Case("many-modules", many_modules, (500, 1000, 2000), scope="modules"),
)


@dataclass
class Row:
    case: str
    n: int
    kilobytes: float
    lines: int
    seconds: float
    cpu_seconds: float
    peak_mb: float
    exit_code: int


def measure(case: Case, n: int, directory: Path) -> Row:
    text = case.generate(n)
    path = directory / f"{case.name.replace('-', '_')}_{n}.py"
    path.write_text(text)
    command = [sys.executable, "-m", "graphmend_lint", str(path), "--no-cache", "--exit-zero",
               "--scope", case.scope, "--output-format", "json"]
    seconds, peak, cpu, code = timed(command, directory)
    return Row(case.name, n, len(text.encode()) / 1024, text.count("\n"), seconds, cpu, peak, code)


def table(rows: list[Row]) -> str:
    out = ["| case | N | KB | lines | wall s | CPU s | CPU x prev | peak MB |", "|---|---|---|---|---|---|---|---|"]
    previous: Row | None = None
    for row in rows:
        same_case = previous is not None and previous.case == row.case
        ratio = f"{row.cpu_seconds / previous.cpu_seconds:.1f}" if same_case and previous.cpu_seconds else "-"
        failed = f" FAILED (exit {row.exit_code})" if row.exit_code else ""
        out.append(f"| {row.case} | {row.n} | {row.kilobytes:,.0f} | {row.lines:,} | {row.seconds:.1f} | "
                   f"{row.cpu_seconds:.1f} | {ratio} | {row.peak_mb:.0f} |{failed}")
        previous = row
    return "\n".join(out)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--case", nargs="+", choices=[c.name for c in CASES], help="cases to run (default: all)")
    parser.add_argument("--sizes", nargs="+", type=int, help="sizes N (default: each case's own)")
    parser.add_argument("--keep", type=Path, help="write the generated files here and keep them")
    args = parser.parse_args()
    cases = [c for c in CASES if not args.case or c.name in args.case]
    rows: list[Row] = []
    with tempfile.TemporaryDirectory() as temporary:
        directory = args.keep or Path(temporary)
        directory.mkdir(parents=True, exist_ok=True)
        (directory / "pyproject.toml").write_text("[tool.graphmend-lint]\n")
        for case in cases:
            for n in args.sizes or case.sizes:
                rows.append(measure(case, n, directory))
                print(table(rows).splitlines()[-1], flush=True)
    print()
    print(f"{datetime.date.today()} {platform.node()} {platform.processor() or platform.machine()} "
          f"cpus={os.cpu_count()} python={platform.python_version()} load={os.getloadavg()[0]:.1f}")
    print(table(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
