"""One program's process-wide torch defaults do not reach the next program a worker measures.

pytorch#105269's repro calls ``torch.set_default_device("cpu")`` at import. That installs a torch
function mode for the rest of the process, and the next program measured in the same worker logged no
break at all (D-FINE's matcher, four breaks when measured alone; seen 2026-12-01). The harness now puts
the default device, the default dtype and grad mode back after each program.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:  # `tests.corpus` is imported as a package from the repository root
    sys.path.insert(0, str(REPO))

from tests.corpus import pool, score  # noqa: E402

#: Changes torch's process-wide defaults at import, and breaks nowhere.
DEFAULTS_CHANGED = '''
import torch

torch.set_default_device("cpu")
torch.set_default_dtype(torch.float64)


def f(x):
    return x * 2


def make():
    return f, [(torch.ones(2),)]
'''
#: A branch on a NumPy value made from a tensor (D-FINE's matcher's stand-in for scipy): GB0170 at line 7.
BRANCHES = '''
import numpy as np
import torch


def f(x):
    cost = np.asarray(x)
    if cost.sum() > 0:
        return x * 2
    return x


def make():
    return f, [(torch.ones(2),)]
'''


@pytest.mark.dynamo
def test_a_program_changing_torch_defaults_leaves_the_next_program_s_breaks_alone(tmp_path: Path) -> None:
    tasks = []
    for name, text in (("defaults_changed", DEFAULTS_CHANGED), ("branches", BRANCHES)):
        (tmp_path / f"{name}.py").write_text(text.lstrip(), encoding="utf-8")
        tasks.append({"name": name, "path": str(tmp_path / f"{name}.py"), "lint": False, "behaviour": False, "variants": {}})
    answers = pool.run_tasks(tasks, timeout=300, workers=1)  # one worker: both run in one process, in this order
    assert all(score.measured(answer) for answer in answers.values()), answers
    assert answers["defaults_changed"]["original"]["sites"] == []
    assert [site[:2] for site in answers["branches"]["original"]["sites"]] == [[7, "GB0170"]]
