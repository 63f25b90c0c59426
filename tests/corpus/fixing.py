"""Apply the real CLI's ``--fix`` to copies of the programs, never to the corpus itself.

All copies go into one temporary project (with an empty config, so nothing
from the repository's configuration applies) and the CLI runs once over it,
as a user runs ``graphmend-lint --fix .`` over a code base. Each program is
its own top-level module there; none imports another.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from tests.corpus.layout import Program
from tests.corpus.pool import REPO

#: The two ``--fix`` modes issue 13 asks about, default scope for both.
FIX_MODES = {"safe": ("--fix",), "unsafe": ("--fix", "--unsafe-fixes")}


@dataclass(frozen=True)
class FixRun:
    """Where the fixed copies are, which of them changed, and what the CLI said."""

    mode: str
    root: Path
    changed: dict[str, Path]  # program name -> fixed copy, only for files the CLI rewrote
    exit_code: int
    stderr: str


def apply_fixes(programs: Sequence[Program], mode: str, workdir: Path, jobs: int = 2) -> FixRun:
    """Copy ``programs`` under ``workdir/mode`` and run ``python -m graphmend_lint <FIX_MODES[mode]>`` there."""
    root = workdir / mode
    root.mkdir(parents=True)
    (root / "pyproject.toml").write_text("[tool.graphmend-lint]\n")
    copies = {}
    for program in programs:
        copies[program.name] = root / f"{program.name}.py"
        shutil.copyfile(program.path, copies[program.name])
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH", "")]))}
    completed = subprocess.run(
        [sys.executable, "-m", "graphmend_lint", *FIX_MODES[mode], "--no-cache", "--exit-zero", "-q", "-j", str(jobs), "."],
        cwd=root,
        capture_output=True,
        text=True,
        env=environment,
        timeout=1800,
    )
    changed = {
        program.name: copies[program.name]
        for program in programs
        if copies[program.name].read_bytes() != program.path.read_bytes()
    }
    return FixRun(mode, root, changed, completed.returncode, completed.stderr)
