"""The pre-commit hooks, run by the real ``pre-commit`` against this working tree.

``pre-commit try-repo`` would be the obvious driver, but it snapshots only
tracked files (new, uncommitted files such as a new rule module are left
out), builds a fresh environment for every call and cannot pass ``args``.
So the test commits a snapshot of the working tree (tracked and untracked,
minus ignored files) to a throwaway repository and points an ordinary
``.pre-commit-config.yaml`` at it; the three runs share one ``PRE_COMMIT_HOME``
and so one environment build (installing astroid and libcst, about a minute).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import yaml
from conftest import PRINT_PROGRAM, REPO, run_cli, write
from test_notebooks import NEW_PRINT_LINES, NOTEBOOK, OLD_PRINT_LINE

HOOK_IDS = ("graphmend-lint", "graphmend-lint-fix")
GIT_IDENTITY = ("-c", "user.name=graphmend tests", "-c", "user.email=tests@graphmend.invalid")


def git(*args: str, cwd: Path) -> str:
    completed = subprocess.run(
        ["git", *GIT_IDENTITY, *args], cwd=cwd, capture_output=True, text=True, check=True, timeout=120
    )
    return completed.stdout


def snapshot_working_tree(destination: Path) -> str:
    """Commit this checkout's working tree (what the lead would commit) to a new repo; return the sha."""
    listed = git("ls-files", "-z", "--cached", "--others", "--exclude-standard", cwd=REPO)
    for relative in filter(None, listed.split("\0")):
        source = REPO / relative
        if source.is_file():  # listed-but-deleted files are skipped
            target = destination / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    git("init", "-q", cwd=destination)
    git("add", "-A", cwd=destination)
    git("commit", "-q", "--no-verify", "-m", "snapshot", cwd=destination)
    return git("rev-parse", "HEAD", cwd=destination).strip()


def pre_commit(*args: str, cwd: Path, home: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PRE_COMMIT_HOME": str(home), "PRE_COMMIT_COLOR": "never"}
    env.pop("PYTHONPATH", None)  # the hook must run from the environment pre-commit built
    return subprocess.run(
        [sys.executable, "-m", "pre_commit", *args],
        check=False,
        cwd=cwd,
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )


def test_manifest_declares_a_check_and_a_fix_hook() -> None:
    hooks = {hook["id"]: hook for hook in yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text())}
    assert tuple(hooks) == HOOK_IDS
    for hook in hooks.values():
        assert hook["language"] == "python"
        assert hook["types_or"] == ["python", "pyi", "jupyter"]
        assert hook["require_serial"] is True
        # In `entry`, so that a user's `args:` cannot drop it.
        assert hook["entry"].split()[:2] == ["graphmend-lint", "--force-exclude"]
    assert "--fix" in hooks["graphmend-lint-fix"]["entry"].split()
    assert "--fix" not in hooks["graphmend-lint"]["entry"].split()


def test_check_fails_then_fix_rewrites_then_check_passes(tmp_path: Path) -> None:
    hook_repo, project, home = tmp_path / "hook-repo", tmp_path / "project", tmp_path / "pre-commit-home"
    project.mkdir()
    hook_repo.mkdir()
    rev = snapshot_working_tree(hook_repo)
    config = {
        "repos": [
            {
                "repo": str(hook_repo),
                "rev": rev,
                "hooks": [{"id": "graphmend-lint"}, {"id": "graphmend-lint-fix", "args": ["--unsafe-fixes"]}],
            }
        ]
    }
    (project / ".pre-commit-config.yaml").write_text(yaml.safe_dump(config))
    model = write(project, "model.py", PRINT_PROGRAM)
    original = model.read_text()
    notebook = project / "nb.ipynb"
    notebook.write_text(NOTEBOOK)
    git("init", "-q", cwd=project)
    git("add", "-A", cwd=project)

    check = pre_commit("run", "graphmend-lint", "--all-files", cwd=project, home=home)
    assert check.returncode == 1, check.stdout + check.stderr
    assert "model.py:7:5: GM201 `print()` in compiled code causes a graph break" in check.stdout
    assert "nb.ipynb:cell 2:6:5: GM201 `print()` in compiled code causes a graph break" in check.stdout

    fix = pre_commit("run", "graphmend-lint-fix", "--all-files", cwd=project, home=home)
    assert fix.returncode == 1, "a hook that modified files must fail: " + fix.stdout
    assert "files were modified by this hook" in fix.stdout
    assert model.read_text() != original, "the fix hook did not rewrite the file"
    assert notebook.read_text() == NOTEBOOK.replace(OLD_PRINT_LINE, NEW_PRINT_LINES), "the notebook was not fixed"

    recheck = pre_commit("run", "graphmend-lint", "--all-files", cwd=project, home=home)
    assert recheck.returncode == 0, recheck.stdout + recheck.stderr
    # pre-commit clones the hook repo once plain (to read the manifest) and once with the
    # manifest's additional_dependencies (nbformat); only the second gets an environment.
    assert sum(1 for _ in home.glob("repo*/py_env-*")) == 1, "the three runs should share one hook environment"


def test_files_all_excluded_by_force_exclude_exit_zero(project: Path) -> None:
    """pre-commit never calls a hook with no files, but it may pass only excluded ones."""
    write(project, "build/generated.py", PRINT_PROGRAM)
    completed = run_cli("--force-exclude", "build/generated.py", cwd=project)
    assert completed.code == 0, completed.out + completed.err
    assert "GM201" not in completed.out


def test_force_exclude_without_any_config_file(tmp_path: Path) -> None:
    write(tmp_path, "build/generated.py", PRINT_PROGRAM)
    completed = run_cli("--force-exclude", "build/generated.py", cwd=tmp_path)
    assert completed.code == 0, completed.out + completed.err
