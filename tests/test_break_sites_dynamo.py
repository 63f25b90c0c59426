"""Dynamo logs the breaks of ``break_site_programs.py`` and ``typing_programs.py`` on exactly the lines recorded there.

Measured in one fresh interpreter, so that no other test's Dynamo state
(configuration, caches, the duplicate-break filter) can change the answer.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")

from tests.test_break_sites import CASES

pytestmark = pytest.mark.dynamo

REPO = Path(__file__).resolve().parents[1]

_MEASURE = """
import contextlib, importlib.util, io, json, os, sys, warnings
import torch
from graphmend_lint.verify.breaks import capture_breaks_over

inputs = [((torch.ones(8), torch.ones(8)), {}), ((-torch.ones(8), -torch.ones(8)), {}),
          ((torch.randn(8), torch.randn(8)), {})]
lines = {}
for path in sys.argv[1:]:
    spec = importlib.util.spec_from_file_location("program_" + os.path.basename(path)[:-3], path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        report = capture_breaks_over(module.f, inputs)
    lines[path] = sorted(report.lines_in(path))
print(json.dumps(lines))
"""


@pytest.fixture(scope="module")
def measured(tmp_path_factory: pytest.TempPathFactory) -> dict[str, set[int]]:
    directory = tmp_path_factory.mktemp("break_sites")
    paths = {}
    for index, (table, name) in enumerate(CASES):
        path = directory / f"program_{index}.py"
        path.write_text(table.source(name))
        paths[name] = str(path)
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    completed = subprocess.run(
        [sys.executable, "-c", _MEASURE, *paths.values()], capture_output=True, text=True, env=environment, timeout=600
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    by_path = json.loads(completed.stdout.splitlines()[-1])
    return {name: set(by_path[path]) for name, path in paths.items()}


@pytest.mark.parametrize(("table", "name"), CASES, ids=[name for _, name in CASES])
def test_dynamo_logs_the_recorded_lines(measured: dict[str, set[int]], table, name: str) -> None:
    assert measured[name] == table.PROGRAMS[name][1]
