"""The corpus pool: a program that fails only after another one poisoned its worker is measured again, fresh."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.corpus import pool

HEADER = "import builtins\n\nimport torch\n\n\ndef f(x):\n    return x + 1\n\n\n"
# Leaves state behind in the worker process, as a program importing a heavy module can.
POISONER = HEADER + "builtins.gm_test_poisoned = True\n\n\ndef make():\n    return f, [(torch.ones(2),)]\n"
# Cannot be measured in a poisoned worker, and can in a fresh one.
VICTIM = HEADER + (
    "def make():\n"
    "    if getattr(builtins, 'gm_test_poisoned', False):\n"
    "        raise RuntimeError('dictionary changed size during iteration')\n"
    "    return f, [(torch.ones(2),)]\n"
)
# Fails wherever it runs: the retry must not hide it.
BROKEN = HEADER + "def make():\n    raise ValueError('always')\n"


def _run(tmp_path: Path, programs: dict[str, str]) -> dict[str, dict[str, Any]]:
    tasks = []
    for name, text in programs.items():
        path = tmp_path / f"{name}.py"
        path.write_text(text)
        tasks.append({"name": name, "path": str(path), "lint": False, "behaviour": False, "variants": {}})
    return pool.run_tasks(tasks, timeout=300, workers=1)


@pytest.mark.dynamo
def test_a_program_poisoned_by_an_earlier_one_is_measured_in_a_fresh_worker(tmp_path: Path) -> None:
    answers = _run(tmp_path, {"poisoner": POISONER, "victim": VICTIM, "broken": BROKEN})
    victim = answers["victim"]
    assert victim["original"]["error"] is None
    assert victim["retried_after"].startswith("RuntimeError: dictionary changed size during iteration [at ")
    assert "retried_after" not in answers["poisoner"]
    broken = answers["broken"]
    assert broken["original"]["error"].startswith("ValueError: always [at broken.py:")
    assert broken["retried_after"].startswith("ValueError: always")
