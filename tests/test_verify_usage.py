"""User errors of ``graphmend-lint verify`` that stop before any arm runs: exit 2, no traceback."""

from __future__ import annotations

import sys

import pytest

from graphmend_lint.verify.cli import main


@pytest.fixture
def empty_project(tmp_path, monkeypatch):
    (tmp_path / "pyproject.toml").write_text("[tool.graphmend-lint]\n")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_no_targets(empty_project, capsys):
    assert main([]) == 2
    assert "no TARGET given and no [tool.graphmend-lint.verify] targets configured" in capsys.readouterr().err


def test_unparsable_target(empty_project, capsys):
    assert main(["not-a-target"]) == 2
    assert "a target is path/to/file.py::factory" in capsys.readouterr().err


def test_bad_hf_config(empty_project, capsys):
    assert main(["hf:bert", "--hf-config", "oops"]) == 2
    assert "expected [TYPE:]KEY=VALUE" in capsys.readouterr().err


def test_plot_without_matplotlib_fails_before_running(empty_project, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # makes `import matplotlib` raise ImportError
    assert main(["x.py::f", "--plot", "out.png"]) == 2
    err = capsys.readouterr().err
    assert "--plot needs matplotlib" in err and "pip install" in err


def test_bad_iterations(empty_project, capsys):
    assert main(["x.py::f", "--bench", "--iters", "0"]) == 2
    assert "--iters" in capsys.readouterr().err
