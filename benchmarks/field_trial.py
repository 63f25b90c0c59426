"""Robustness field trial (issue 9 §4): lint and fix whole real code bases with the real CLI.

Each corpus is copied into a temporary directory (next to a ``pyproject.toml``
holding an empty ``[tool.graphmend-lint]`` table, so config and cache are
isolated), then three fresh subprocesses run on the copy::

    python -m graphmend_lint COPY --scope SCOPE --no-cache --output-format json --exit-zero   # check
    python -m graphmend_lint COPY --scope SCOPE --no-cache --fix --unsafe-fixes --exit-zero   # fix
    python -m graphmend_lint COPY --scope SCOPE --no-cache --fix --unsafe-fixes --exit-zero   # fix again

Checked: no crash (exit code 0) and no traceback on stderr (``internal error``
lines are collected: they name the rule and the file); every file the fix
changed (compared with the pristine copy) still parses and still *imports*
(``import_check.py``: imported from the pristine and the fixed copy in fresh
interpreters; a module that imported before and fails after is broken by the
fix); the second ``--fix`` changes nothing (every file hashed before and
after); and how long each step takes. Packages are copied whole (their
compiled extensions too) so that they import from the copy. Prints a table and
writes JSON with ``--json``. Examples::

    python benchmarks/field_trial.py                       # transformers and stdlib, --scope all
    python benchmarks/field_trial.py --corpus transformers --scope modules
    python benchmarks/field_trial.py --corpus stdlib --json field_trial.json
    python benchmarks/field_trial.py --corpus transformers torch stdlib --jobs 2

Exit status 1 when any check fails, so the script can gate CI.
"""

from __future__ import annotations

import argparse
import ast
import datetime
import hashlib
import importlib.util
import json
import os
import platform
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
import warnings
from dataclasses import asdict, dataclass, field
from pathlib import Path

from import_check import check_imports

CORPORA = ("transformers", "torch", "stdlib")
DEFAULT_CORPORA = ("transformers", "stdlib")
#: Never copied: byte code, and the third-party packages that live inside the stdlib dir.
SKIP_DIRS = {"__pycache__", "site-packages", "dist-packages"}
#: Folders the linter never visits (its default ``exclude``); not counted as corpus files.
LINTER_EXCLUDED = {
    ".git", ".hg", ".svn", ".tox", ".nox", ".venv", "venv", ".eggs", "__pycache__",
    "build", "dist", "node_modules", ".graphmend_cache", "site-packages",
}


@dataclass
class Row:
    corpus: str
    files: int
    lines: int
    check_seconds: float
    findings: int
    fix_seconds: float
    files_changed: int
    unparsable_after_fix: int
    second_fix_seconds: float
    second_fix_changes: int
    internal_errors: int
    tracebacks: int
    imports_checked: int = 0
    imports_broken: int = 0
    exit_codes: list[int] = field(default_factory=list)
    details: dict[str, list[str]] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return (
            all(code == 0 for code in self.exit_codes)
            and not self.unparsable_after_fix
            and not self.second_fix_changes
            and not self.internal_errors
            and not self.tracebacks
            and not self.imports_broken
        )


def corpus_path(name: str) -> Path:
    if name == "stdlib":
        return Path(sysconfig.get_paths()["stdlib"])
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit(f"corpus {name!r} is not installed")
    return Path(next(iter(spec.submodule_search_locations)))


def copy_corpus(source: Path, destination: Path, sources_only: bool) -> None:
    """Copy *source* without byte code or site-packages; with *sources_only*, only its ``.py`` files.

    A package is copied whole so that it imports from the copy (torch needs its
    compiled extensions); the stdlib's sources are enough, its extensions load
    from the interpreter's own directories.
    """

    def ignore(directory: str, names: list[str]) -> set[str]:
        return {
            name for name in names
            if name in SKIP_DIRS
            or (sources_only and not name.endswith(".py") and not os.path.isdir(os.path.join(directory, name)))
        }

    shutil.copytree(source, destination, ignore=ignore, symlinks=False, ignore_dangling_symlinks=True)


def python_files(root: Path) -> list[Path]:
    return sorted(
        path for path in root.rglob("*.py")
        if path.is_file() and not LINTER_EXCLUDED.intersection(path.relative_to(root).parts[:-1])
    )


def snapshot(root: Path) -> dict[str, str]:
    """``relative path -> sha256`` of every file under *root*."""
    return {
        str(path.relative_to(root)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in root.rglob("*")
        if path.is_file() and ".graphmend_cache" not in path.parts
    }


def parses(data: bytes) -> bool:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # SyntaxWarning for invalid escapes in old test files
        try:
            ast.parse(data)
        except (SyntaxError, ValueError):
            return False
    return True


def run_cli(arguments: list[str], cwd: Path, timeout: float) -> tuple[float, subprocess.CompletedProcess[str]]:
    command = [sys.executable, "-m", "graphmend_lint", *arguments]
    start = time.perf_counter()
    completed = subprocess.run(
        command, cwd=cwd, capture_output=True, text=True, errors="replace", timeout=timeout,
        env={**os.environ, "PYTHONWARNINGS": "ignore"},
    )
    return time.perf_counter() - start, completed


def scan_stderr(stderr: str, step: str, internal: list[str], tracebacks: list[str]) -> None:
    lines = stderr.splitlines()
    for index, line in enumerate(lines):
        if "internal error" in line:
            internal.append(f"{step}: {line.strip()}")
        if line.startswith("Traceback (most recent call last)"):
            tracebacks.append(f"{step}: " + "\n".join(lines[index : index + 60]))


def count_findings(stdout: str) -> int:
    try:
        return len(json.loads(stdout))
    except json.JSONDecodeError:
        return -1


def trial(name: str, scope: str, jobs: int | None, timeout: float, keep: Path | None) -> Row:
    source = corpus_path(name)
    workdir = Path(tempfile.mkdtemp(prefix=f"gm-field-{name}-"))
    try:
        (workdir / "pyproject.toml").write_text("[tool.graphmend-lint]\n")
        pristine = workdir / "pristine" / name
        copy = workdir / "work" / name
        copy_corpus(source, pristine, sources_only=name == "stdlib")
        shutil.copytree(pristine, copy, symlinks=True)
        files = python_files(copy)
        lines = sum(path.read_bytes().count(b"\n") for path in files)
        common = [str(copy), "--scope", scope, "--no-cache"] + (["--jobs", str(jobs)] if jobs else [])
        internal: list[str] = []
        tracebacks: list[str] = []
        codes: list[int] = []
        details: dict[str, list[str]] = {}

        check_seconds, check = run_cli([*common, "--output-format", "json", "--exit-zero"], workdir, timeout)
        codes.append(check.returncode)
        scan_stderr(check.stderr, "check", internal, tracebacks)
        findings = count_findings(check.stdout)

        fix_arguments = [*common, "--fix", "--unsafe-fixes", "--exit-zero"]
        fix_seconds, fixed = run_cli(fix_arguments, workdir, timeout)
        codes.append(fixed.returncode)
        scan_stderr(fixed.stderr, "fix", internal, tracebacks)

        before, after = snapshot(pristine), snapshot(copy)
        changed = sorted(path for path, digest in after.items() if before.get(path) != digest)
        unparsable = [
            path for path in changed
            if path.endswith(".py") and not parses((copy / path).read_bytes())
        ]

        # the import root: the stdlib's modules are named from its own folder, a package's from its parent
        import_roots = (pristine, copy) if name == "stdlib" else (pristine.parent, copy.parent)
        prefix = "" if name == "stdlib" else f"{name}/"
        imports = check_imports(*import_roots, [prefix + path for path in changed if path.endswith(".py")])

        second_seconds, again = run_cli(fix_arguments, workdir, timeout)
        codes.append(again.returncode)
        scan_stderr(again.stderr, "second fix", internal, tracebacks)
        final = snapshot(copy)
        second_changes = sorted(path for path in set(after) | set(final) if after.get(path) != final.get(path))

        details = {"changed": changed, "unparsable_after_fix": unparsable, "imports_broken": imports.broken_by_fix,
                   "second_fix_changes": second_changes, "internal_errors": internal, "tracebacks": tracebacks}
        for step, completed in (("check", check), ("fix", fixed), ("second fix", again)):
            if completed.returncode != 0:
                details.setdefault("crashes", []).append(
                    f"{step}: exit {completed.returncode}: {completed.stderr[-2000:]}")
        if keep is not None:
            destination = keep / name
            shutil.rmtree(destination, ignore_errors=True)
            shutil.copytree(workdir, destination)
        return Row(name, len(files), lines, round(check_seconds, 1), findings, round(fix_seconds, 1),
                   len(changed), len(unparsable), round(second_seconds, 1), len(second_changes),
                   len(internal), len(tracebacks), imports.checked, len(imports.broken_by_fix), codes, details)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


COLUMNS = (
    ("corpus", "corpus"), ("files", "files"), ("lines", "lines"), ("check s", "check_seconds"),
    ("findings", "findings"), ("fix s", "fix_seconds"), ("changed", "files_changed"),
    ("unparsable", "unparsable_after_fix"), ("2nd fix s", "second_fix_seconds"),
    ("2nd-fix changes", "second_fix_changes"), ("internal errors", "internal_errors"),
    ("tracebacks", "tracebacks"), ("imports checked", "imports_checked"), ("imports broken", "imports_broken"),
)


def table(rows: list[Row]) -> str:
    header = [title for title, _ in COLUMNS]
    body = [[str(getattr(row, key)) for _, key in COLUMNS] for row in rows]
    widths = [max(len(cell) for cell in column) for column in zip(header, *body)]
    render = lambda cells: "| " + " | ".join(c.ljust(w) for c, w in zip(cells, widths)) + " |"  # noqa: E731
    return "\n".join([render(header), "|" + "|".join("-" * (w + 2) for w in widths) + "|", *map(render, body)])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", nargs="+", choices=CORPORA, default=list(DEFAULT_CORPORA))
    parser.add_argument("--scope", choices=("compiled", "modules", "all"), default="all",
                        help="passed to --scope (default all: every function counts as traced)")
    parser.add_argument("--jobs", type=int, default=None, help="passed to --jobs (default: the CLI's own)")
    parser.add_argument("--timeout", type=float, default=3600, help="seconds per CLI run")
    parser.add_argument("--json", type=Path, help="write the rows and details here")
    parser.add_argument("--keep", type=Path, help="keep each corpus's pristine and fixed copies under this folder")
    args = parser.parse_args(argv)

    rows = []
    for name in args.corpus:
        print(f"field trial: {name} ...", file=sys.stderr, flush=True)
        rows.append(trial(name, args.scope, args.jobs, args.timeout, args.keep))
    print(table(rows))
    for row in rows:
        for kind in ("crashes", "tracebacks", "internal_errors", "unparsable_after_fix", "imports_broken",
                     "second_fix_changes"):
            for item in row.details.get(kind, [])[:20]:
                print(f"{row.corpus}: {kind}: {item}")
    if args.json:
        payload = {
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "machine": {"platform": platform.platform(), "python": platform.python_version(),
                        "cpus": os.cpu_count()},
            "jobs": args.jobs,
            "scope": args.scope,
            "rows": [asdict(row) | {"ok": row.ok} for row in rows],
        }
        args.json.write_text(json.dumps(payload, indent=2) + "\n")
    return 0 if all(row.ok for row in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
