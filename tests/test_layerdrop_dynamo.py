"""GM101's LayerDrop fix against real Dynamo, in train mode (torch 2.13, CPU).

For each catalog pair (the ``continue``, ``to_drop`` flag and ``skip_the_layer``
gate forms), a fresh
subprocess (``layerdrop_worker.py``) measures:

* eagerly, the fixed program returns the same outputs, leaves the same
  gradients (``None`` where the original left ``None``) and the same RNG state
  after forward and backward, for several seeds: the eager path is the
  original code;
* Dynamo logs the LayerDrop break (GB0170) in the bad program and nothing in
  the fixed one, and ``fullgraph=True`` forward and backward run;
* the compiled path (backends ``eager`` and ``aot_eager``) computes exactly
  what the same code does eagerly when ``torch.compiler.is_compiling()`` is
  true: the gradients under compile are those of the outputs it computed;
* the ``torch.cond`` alternative the fix rejects keeps the outputs but not the
  gradients (its backward re-runs the layer's dropout with new random numbers);
  if a torch release fixes that, this test says so and cond can be reconsidered.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("torch")

pytestmark = pytest.mark.dynamo

ROOT = Path(__file__).resolve().parents[1]
WORKER = Path(__file__).with_name("layerdrop_worker.py")
#: bad program -> the line of its LayerDrop ``if`` (where Dynamo logs GB0170)
PAIRS = {"bad_layerdrop_continue.py": 33, "bad_layerdrop_flag.py": 33, "bad_layerdrop_gate.py": 34}


@pytest.fixture(scope="module", params=sorted(PAIRS))
def measured(request: pytest.FixtureRequest) -> tuple[str, dict[str, Any]]:
    bad = ROOT / "rules" / "GM101" / request.param
    fixed = bad.with_name(request.param.replace("bad_", "fixed_", 1))
    done = subprocess.run(
        [sys.executable, str(WORKER), str(bad), str(fixed)], capture_output=True, text=True, timeout=900, cwd=ROOT
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return request.param, json.loads(done.stdout.strip().splitlines()[-1])


def test_eager_outputs_gradients_and_rng_are_the_originals(measured: tuple[str, dict[str, Any]]) -> None:
    _, answer = measured
    assert answer["eager"] and all(all(seed.values()) for seed in answer["eager"])


def test_the_logged_break_is_removed_and_fullgraph_passes(measured: tuple[str, dict[str, Any]]) -> None:
    name, answer = measured
    assert answer["sites"] == {"bad": [[PAIRS[name], "GB0170"]], "fixed": []}
    assert answer["fullgraph"]["bad"].startswith("Unsupported: Data-dependent branching")
    assert answer["fullgraph"]["fixed"] == {"eager": None, "aot_eager": None}


def test_the_compiled_path_differentiates_what_it_computed(measured: tuple[str, dict[str, Any]]) -> None:
    _, answer = measured
    for backend in ("eager", "aot_eager"):
        assert answer["compiled_path"][backend] and all(all(seed.values()) for seed in answer["compiled_path"][backend])


def test_torch_cond_alternative_changes_the_gradients(measured: tuple[str, dict[str, Any]]) -> None:
    _, answer = measured
    assert all(seed["outputs"] for seed in answer["cond"])
    assert not all(seed["gradients_none_as_zero"] for seed in answer["cond"]), (
        "torch.cond's backward now keeps dropout's mask: reconsider cond for LayerDrop (predicate_layerdrop.py)"
    )
