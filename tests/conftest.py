"""Shared helpers: run the real CLI in a subprocess, write small projects."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@dataclass
class Completed:
    code: int
    out: str
    err: str


def run_cli(*args: str, cwd: Path, stdin: str | None = None, env: dict[str, str] | None = None) -> Completed:
    """Run ``python -m graphmend_lint`` exactly as a user would."""
    environment = {**os.environ, **(env or {})}
    environment["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), environment.get("PYTHONPATH", "")]))
    process = subprocess.run(
        [sys.executable, "-m", "graphmend_lint", *args],
        cwd=cwd,
        input=stdin,
        capture_output=True,
        text=True,
        env=environment,
        timeout=300,
    )
    return Completed(process.returncode, process.stdout, process.stderr)


def write(root: Path, relative: str, text: str) -> Path:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip("\n"))
    return path


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """An empty project directory with its own (empty) config, isolated from the repo's."""
    (tmp_path / "pyproject.toml").write_text("[tool.graphmend-lint]\n")
    return tmp_path


#: A print whose fix is the (unsafe) guard: ``y.data`` is not provably a tensor the print op takes.
PRINT_PROGRAM = """import torch


@torch.compile
def step(x):
    y = x * 2
    print("y:", y.data)
    return y.relu()
"""
#: The fixed text of the print in PRINT_PROGRAM.
GUARDED_PRINT = 'if not torch.compiler.is_compiling():\n        print("y:", y.data)\n'

CLEAN_PROGRAM = """import torch


@torch.compile
def step(x):
    if x.shape[0] > 1:
        x = x * 2
    return x
"""
