"""Shared by ``paper_table.py`` and ``hf_census.py``: run ``graphmend-lint verify`` and read its JSON.

Both benchmarks measure through the real verify mode, in a subprocess of the
interpreter whose torch and transformers are being measured (``--python``),
so that one driver can report on a second environment (e.g. a venv with
transformers 4.52.4) without importing either into itself. This checkout is
put first on that interpreter's ``PYTHONPATH``, so the venv needs no install
of graphmend-lint, only its dependencies.

Each run is cached as one JSON file holding the command, the host and the
verify result; a cached file is reused only for the same command on the same
host, so a changed option (iterations, device...) or a cache copied to a GPU
machine measures again instead of silently reporting the old number. This is
what makes the benchmarks resumable.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
#: Output that hides nothing useful but fills logs (transformers' own warnings are not break sites).
QUIET_ENV = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TRANSFORMERS_VERBOSITY": "error"}
STDERR_TAIL = 3000


@dataclass(frozen=True)
class VerifyRun:
    """One ``verify`` invocation's outcome: the target's JSON object, or why there is none."""

    command: list[str]
    returncode: int | None  # None: the driver's own timeout killed it
    seconds: float
    result: dict[str, Any] | None
    stderr_tail: str = ""
    host: str = platform.node()

    def to_json(self) -> dict[str, Any]:
        return {"command": self.command, "host": self.host, "returncode": self.returncode,
                "seconds": round(self.seconds, 1), "result": self.result, "stderr_tail": self.stderr_tail}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> VerifyRun:
        return cls(data["command"], data["returncode"], data["seconds"], data["result"], data.get("stderr_tail", ""),
                   data.get("host", platform.node()))


def arm_environment() -> dict[str, str]:
    """This checkout first on ``PYTHONPATH`` (the measured venv need not install it), hub offline."""
    env = {**os.environ, **QUIET_ENV}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH", "")]))
    return env


def verify_command(python: str, target: str, arguments: Sequence[str], unsafe: bool = True) -> list[str]:
    """The command line, without ``--json`` (the cache compares it, and the JSON path is temporary)."""
    return [python, "-m", "graphmend_lint", "verify", target, *(["--unsafe-fixes"] if unsafe else []), *arguments]


def run_verify(python: str, target: str, arguments: Sequence[str], timeout_s: float, unsafe: bool = True) -> VerifyRun:
    """Run verify for one target and return its JSON object (``None`` when it wrote none)."""
    command = verify_command(python, target, arguments, unsafe)
    with tempfile.TemporaryDirectory(prefix="gm-bench-") as directory:
        out = Path(directory, "verify.json")
        started = time.perf_counter()
        try:
            completed = subprocess.run(
                [*command, "--json", str(out)], cwd=directory, capture_output=True, text=True, errors="replace",
                env=arm_environment(), timeout=timeout_s, check=False,
            )
        except subprocess.TimeoutExpired as expired:
            tail = (expired.stderr or b"")[-STDERR_TAIL:]
            text = tail.decode(errors="replace") if isinstance(tail, bytes) else tail
            return VerifyRun(command, None, time.perf_counter() - started, None, text)
        seconds = time.perf_counter() - started
        result = json.loads(out.read_text())[0] if out.exists() else None
        return VerifyRun(command, completed.returncode, seconds, result, completed.stderr[-STDERR_TAIL:])


def cached_verify(cache: Path | None, python: str, target: str, arguments: Sequence[str], timeout_s: float,
                  resume: bool = True, unsafe: bool = True) -> tuple[VerifyRun, bool]:
    """:func:`run_verify`, reusing *cache* when it holds a run of the same command here; ``(run, from_cache)``.

    ``unsafe``: verify with ``--unsafe-fixes`` (the default) or with the safe fixes only.
    """
    command = verify_command(python, target, arguments, unsafe)
    if resume and cache is not None and cache.exists():
        run = VerifyRun.from_json(json.loads(cache.read_text()))
        if run.command == command and run.host == platform.node():
            return run, True
    run = run_verify(python, target, arguments, timeout_s, unsafe)
    if cache is not None:
        cache.parent.mkdir(parents=True, exist_ok=True)
        cache.write_text(json.dumps(run.to_json(), indent=1) + "\n")
    return run, False


def interpreter_versions(python: str) -> dict[str, str]:
    """torch, transformers and Python versions of *python*, asked without importing them here."""
    code = ("import json, platform, torch, transformers; print(json.dumps({'torch': torch.__version__, "
            "'transformers': transformers.__version__, 'python': platform.python_version()}))")
    completed = subprocess.run([python, "-c", code], capture_output=True, text=True, check=True,
                               env=arm_environment())
    return json.loads(completed.stdout.strip().splitlines()[-1])


# -- reading one verify result ----------------------------------------------------------------


def arm_counts(result: dict[str, Any] | None, arm: str) -> dict[str, int] | None:
    """Graphs, splitting breaks and explain's breaks of one arm, ``None`` when that arm did not run."""
    data = (result or {}).get(arm)
    if not data:
        return None
    return {"graphs": data["graph_count"], "breaks": data["graph_break_count"],
            "explain_breaks": data["explain_break_count"], "logged": data["logged_sites"],
            "skipped_frames": len(data["skipped_frames"])}


def site_recall(result: dict[str, Any] | None) -> tuple[int, int]:
    """``(found, found + missed)`` runtime break sites in linted files (outside-scope sites excluded)."""
    reconciliation = (result or {}).get("reconciliation") or {}
    found, missed = reconciliation.get("found", 0), reconciliation.get("missed", 0)
    return found, found + missed


def missed_sites(result: dict[str, Any] | None) -> list[str]:
    """``file:line GBxxxx`` of each break site the linter missed (short file names)."""
    reconciliation = (result or {}).get("reconciliation") or {}
    return [f"{Path(s['filename']).name}:{s['line']} {s['gb_id']}"
            for s in reconciliation.get("sites", []) if s["status"] == "missed"]


def fixes_applied(result: dict[str, Any] | None) -> list[str]:
    """Sorted distinct rule codes the fixed arm applied."""
    fixed = (result or {}).get("fixed") or {}
    return sorted({code for codes in (fixed.get("fixes") or {}).values() for code in codes})


def yes_no(value: bool | None) -> str:
    return "-" if value is None else ("yes" if value else "NO")


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A GitHub table, columns padded so the terminal output reads too."""
    widths = [max(len(str(cell)) for cell in column) for column in zip(header, *rows)]

    def render(cells: Sequence[str]) -> str:
        return "| " + " | ".join(str(c).ljust(w) for c, w in zip(cells, widths)) + " |"

    return "\n".join([render(header), "|" + "|".join("-" * (w + 2) for w in widths) + "|", *map(render, rows)])


def progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)
