"""Does every module a fix changed still import? (issue 13 §3: "it parses" is not the bar.)

Each changed file is imported twice, from the pristine copy and from the fixed
copy, in fresh interpreters that put the copy first on ``sys.path``. A module
is *broken by the fix* when the pristine one imports and the fixed one does
not; a module that fails both ways (an optional dependency missing) says
nothing about the fix and is only counted.

Modules the interpreter already imported at start-up (``os``, ``io``, ... in
the stdlib) cannot be imported again from the copy, so their file is executed
under a private name instead. Batches run in separate processes with a
timeout, so one hanging or crashing module cannot hide the others.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

#: Importing these has effects beyond the import (GUIs, browsers, test runs, the REPL).
NEVER_IMPORTED = ("test.", "idlelib.", "tkinter.", "turtledemo.", "lib2to3.tests.", "antigravity", "this", "__main__")
BATCH = 40

_IMPORTER = r"""
import importlib, importlib.util, json, sys, warnings
warnings.simplefilter("ignore")
root, names = sys.argv[1], json.loads(sys.argv[2])
sys.path.insert(0, root)
preloaded = set(sys.modules)
results = {}
for name, path in names:
    try:
        if name in preloaded:
            spec = importlib.util.spec_from_file_location("_gm_import_check_" + name.replace(".", "_"), path)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
        else:
            importlib.import_module(name)
        results[name] = "ok"
    except BaseException as error:  # SystemExit and KeyboardInterrupt from a module's top level count too
        results[name] = f"{type(error).__name__}: {str(error).splitlines()[0][:200] if str(error) else ''}"
print("@@results@@" + json.dumps(results))
"""


@dataclass
class ImportReport:
    checked: int = 0
    broken_by_fix: list[str] = field(default_factory=list)  # "module: error"
    failing_before_too: int = 0
    skipped: int = 0


def module_name(relative: Path) -> str | None:
    """``pkg/sub/mod.py`` -> ``pkg.sub.mod``; ``pkg/__init__.py`` -> ``pkg``; ``None`` for non-identifiers."""
    parts = list(relative.with_suffix("").parts)
    if parts and parts[-1] == "__init__":
        parts.pop()
    if not parts or not all(part.isidentifier() for part in parts):
        return None
    return ".".join(parts)


def check_imports(pristine: Path, fixed: Path, changed: Iterable[str], timeout: float = 600) -> ImportReport:
    """Import each changed ``.py`` (paths relative to the copies' common import root) from both copies."""
    report = ImportReport()
    names: list[tuple[str, str]] = []
    for relative in sorted(changed):
        name = module_name(Path(relative)) if relative.endswith(".py") else None
        if name is None or name.startswith(NEVER_IMPORTED) or name in NEVER_IMPORTED:
            report.skipped += relative.endswith(".py")
            continue
        names.append((name, relative))
    before = _import_all(pristine, names, timeout)
    after = _import_all(fixed, names, timeout)
    for name, _ in names:
        report.checked += 1
        if before.get(name) != "ok":
            report.failing_before_too += 1
        elif after.get(name) != "ok":
            report.broken_by_fix.append(f"{name}: {after.get(name, 'not reached')}")
    return report


def _import_all(root: Path, names: list[tuple[str, str]], timeout: float) -> dict[str, str]:
    results: dict[str, str] = {}
    for start in range(0, len(names), BATCH):
        batch = [(name, str(root / relative)) for name, relative in names[start : start + BATCH]]
        try:
            completed = subprocess.run(
                [sys.executable, "-c", _IMPORTER, str(root), json.dumps(batch)],
                capture_output=True, text=True, errors="replace", timeout=timeout, cwd=root,
                env={**os.environ, "PYTHONWARNINGS": "ignore", "PYTHONDONTWRITEBYTECODE": "1"},
            )
        except subprocess.TimeoutExpired:
            results.update({name: "timeout" for name, _ in batch})
            continue
        marker = next((line for line in completed.stdout.splitlines() if line.startswith("@@results@@")), None)
        if marker is None:
            tail = (completed.stderr.strip().splitlines() or ["no output"])[-1]
            results.update({name: f"interpreter died: {tail}" for name, _ in batch})
            continue
        results.update(json.loads(marker.removeprefix("@@results@@")))
    return results
