"""The flake8 plugin reports what the CLI reports, where flake8 users expect it.

Most tests run the real ``flake8`` executable in a subprocess, because the
properties that matter (entry-point discovery, column convention, noqa and
``--select``/``--extend-ignore`` handling) are flake8's, not ours.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path

import pytest
from conftest import REPO, run_cli, write

from graphmend_lint import flake8_plugin
from graphmend_lint.config import Settings
from graphmend_lint.flake8_plugin import (
    Flake8Plugin,
    PluginInternalError,
    settings_for_directory,
)
from graphmend_lint.pipeline import FileOutcome

# A non-ASCII string before the `print` on line 7: its character column (21,
# 0-based) differs from its UTF-8 byte column (23), so a byte/char mix-up shows.
STEP = """
import torch


@torch.compile
def step(x: torch.Tensor):
    y = x * 2
    label = "größe"; print(label, y.shape)
    if y.sum() > 0:
        y = y + 1
    print("ok")  # noqa: GM201
    return y.relu()
"""
# Not compiled anywhere: traced only under `scope = "all"`.
HELPER = """
import torch


def scale(x: torch.Tensor) -> torch.Tensor:
    print("x", x.shape)
    return x.relu()
"""
GM201_LINE = "step.py:7:22: GM201 `print()` in compiled code causes a graph break"
GM101_LINE = "step.py:8:8: GM101 branch on a tensor value `y.sum() > 0` causes a graph break"


def run_flake8(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``python -m flake8`` with this checkout first on the path; ``--isolated`` ignores flake8 configs."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    return subprocess.run(
        [sys.executable, "-m", "flake8", "--isolated", *args],
        check=False,
        cwd=cwd,
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )


def output_lines(completed: subprocess.CompletedProcess[str]) -> list[str]:
    return completed.stdout.splitlines()


def test_plugin_is_registered_for_flake8() -> None:
    registered = {entry.name: entry.value for entry in entry_points(group="flake8.extension")}
    assert registered.get("GM") == "graphmend_lint.flake8_plugin:Flake8Plugin", (
        "the package is not installed with its entry points; run `pip install -e .`"
    )


def test_flake8_prints_the_cli_json_positions_on_every_catalog_program(project: Path) -> None:
    """flake8 adds 1 to the 0-based column the plugin yields, which must give ruff's 1-based JSON column."""
    for program in sorted((REPO / "rules").glob("GM*/bad_*.py")) + sorted((REPO / "examples").glob("*.py")):
        target = project / program.relative_to(REPO)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(program, target)
    write(project, "step.py", STEP)
    cli = run_cli("--output-format", "json", "--no-cache", "rules", "examples", "step.py", cwd=project)
    assert cli.code == 1, cli.err
    from_cli = sorted(
        f"{(project / row['filename']).resolve().relative_to(project.resolve()).as_posix()}:"
        f"{row['location']['row']}:{row['location']['column']}: {row['code']} {row['message']}"
        for row in json.loads(cli.out)
    )
    flake8 = run_flake8("--select", "GM", "rules", "examples", "step.py", cwd=project)
    from_flake8 = sorted(line.removeprefix("./") for line in output_lines(flake8))
    assert flake8.returncode == 1, flake8.stderr
    assert len(from_cli) >= 10, "the catalog should give many findings to compare"
    assert from_flake8 == from_cli


def test_select_extend_ignore_and_noqa_are_flake8s(project: Path) -> None:
    write(project, "step.py", STEP)
    selected = run_flake8("--select", "GM", "step.py", cwd=project)
    assert output_lines(selected) == [GM201_LINE, GM101_LINE], selected.stderr
    ignored = run_flake8("--select", "GM", "--extend-ignore", "GM201", "step.py", cwd=project)
    assert output_lines(ignored) == [GM101_LINE], ignored.stderr
    only_gm101 = run_flake8("--select", "GM101", "step.py", cwd=project)
    assert output_lines(only_gm101) == [GM101_LINE], only_gm101.stderr


def test_gm_codes_are_on_by_default_next_to_flake8s_own(project: Path) -> None:
    write(project, "step.py", STEP)
    completed = run_flake8("step.py", cwd=project)
    assert output_lines(completed) == [
        "step.py:7:20: E702 multiple statements on one line (semicolon)",
        GM201_LINE,
        GM101_LINE,
    ], completed.stderr


def test_noqa_for_another_code_does_not_hide_the_finding(project: Path) -> None:
    write(project, "step.py", STEP.replace("  # noqa: GM201", "  # noqa: GM101"))
    completed = run_flake8("--select", "GM", "step.py", cwd=project)
    assert "step.py:10:5: GM201 `print()` in compiled code causes a graph break" in output_lines(completed)


def test_analysis_settings_come_from_the_config_but_selection_does_not(project: Path) -> None:
    write(project, "helpers.py", HELPER)
    assert output_lines(run_flake8("--select", "GM", "helpers.py", cwd=project)) == [], "not compiled by default"
    (project / "pyproject.toml").write_text('[tool.graphmend-lint]\nscope = "all"\nignore = ["GM201"]\n')
    completed = run_flake8("--select", "GM", "helpers.py", cwd=project)
    # `scope = "all"` makes the uncompiled helper traced; `ignore` is left to flake8.
    assert output_lines(completed) == ["helpers.py:5:5: GM201 `print()` in compiled code causes a graph break"]


def test_a_config_error_fails_the_run_and_names_the_key(project: Path) -> None:
    (project / "pyproject.toml").write_text("[tool.graphmend-lint]\nbogus = 1\n")
    write(project, "step.py", STEP)
    completed = run_flake8("--select", "GM", "step.py", cwd=project)
    assert completed.returncode != 0
    assert "failed during execution" in completed.stdout + completed.stderr
    assert "unknown key `bogus`" in completed.stdout + completed.stderr


def test_syntax_errors_are_flake8s_e999_not_gm001(project: Path) -> None:
    write(project, "broken.py", "def forward(self, x)\n    return x\n")
    completed = run_flake8("broken.py", cwd=project)
    assert [line.split(" ", 2)[1] for line in output_lines(completed)] == ["E999"], completed.stdout


def test_plugin_yields_zero_based_columns_and_its_own_type(project: Path) -> None:
    path = write(project, "step.py", STEP)
    lines = path.read_text().splitlines(keepends=True)
    results = list(Flake8Plugin(tree=None, filename=str(path), lines=lines).run())  # type: ignore[arg-type]
    assert [result[:2] for result in results] == [(7, 21), (8, 7)]
    assert results[0][2].startswith("GM201 ") and results[0][3] is Flake8Plugin


def test_plugin_drops_gm001_even_if_flake8_hands_it_unparsable_text(project: Path) -> None:
    plugin = Flake8Plugin(tree=None, filename=str(project / "x.py"), lines=["def f(:\n"])  # type: ignore[arg-type]
    assert list(plugin.run()) == []


def test_settings_are_loaded_once_per_directory(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[Path | None] = []

    def counting_load_settings(config: Path | None = None, start: Path | None = None) -> Settings:
        calls.append(start)
        return Settings()

    monkeypatch.setattr(flake8_plugin, "load_settings", counting_load_settings)
    settings_for_directory.cache_clear()
    try:
        for name in ("a.py", "b.py"):
            path = write(project, name, STEP)
            lines = path.read_text().splitlines(keepends=True)
            Flake8Plugin(tree=None, filename=str(path), lines=lines)  # type: ignore[arg-type]
    finally:
        settings_for_directory.cache_clear()
    assert calls == [project]


def test_a_crashing_rule_fails_the_flake8_run_loudly(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Like the CLI's exit 2: an internal error must not pass for a clean file."""

    def crashing_analyze(source: object, path: str, settings: Settings) -> FileOutcome:
        return FileOutcome(path=path, internal_errors=["internal error: rule GM201 failed on x.py: boom"])

    monkeypatch.setattr(flake8_plugin, "analyze", crashing_analyze)
    with pytest.raises(PluginInternalError, match="rule GM201 failed"):
        Flake8Plugin(tree=None, filename=str(project / "x.py"), lines=["x = 1\n"])  # type: ignore[arg-type]
