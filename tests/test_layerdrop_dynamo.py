"""GM101's LayerDrop fix against real Dynamo, in train mode (torch 2.13, CPU).

For each catalog pair (the ``continue``, ``to_drop`` flag and ``skip_the_layer``
gate forms, a ``continue`` over a layer whose attentions are collected on
request, ``if to_drop: <placeholders> else: <layer>``, WavLM's gate
over a ``position_bias`` that is ``None`` until the first layer, and FSMT's
``if self.training and (draw < p): continue``), a fresh
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
from conftest import run_cli

pytest.importorskip("torch")

pytestmark = pytest.mark.dynamo

ROOT = Path(__file__).resolve().parents[1]
WORKER = Path(__file__).with_name("layerdrop_worker.py")
#: bad program -> the line of its LayerDrop ``if`` (where Dynamo logs GB0170)
PAIRS = {
    "bad_layerdrop_continue.py": 33,
    "bad_layerdrop_flag.py": 33,
    "bad_layerdrop_gate.py": 34,
    "bad_layerdrop_outputs.py": 32,
    "bad_layerdrop_placeholders.py": 33,
    "bad_layerdrop_position_bias.py": 39,
    "bad_layerdrop_training_and.py": 31,
}
#: pairs whose layers the worker's ``torch.cond`` variant cannot call (it passes no ``position_bias``)
NO_COND_VARIANT = {"bad_layerdrop_position_bias.py"}


@pytest.fixture(scope="module", params=sorted(PAIRS))
def measured(request: pytest.FixtureRequest) -> tuple[str, dict[str, Any]]:
    bad = ROOT / "rules" / "GM101" / request.param
    fixed = bad.with_name(request.param.replace("bad_", "fixed_", 1))
    no_cond = ["--no-cond"] if request.param in NO_COND_VARIANT else []
    done = subprocess.run(
        [sys.executable, str(WORKER), str(bad), str(fixed), *no_cond], capture_output=True, text=True, timeout=900, cwd=ROOT
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


@pytest.mark.parametrize("measured", sorted(set(PAIRS) - NO_COND_VARIANT), indirect=True)
def test_torch_cond_alternative_changes_the_gradients(measured: tuple[str, dict[str, Any]]) -> None:
    _, answer = measured
    assert all(seed["outputs"] for seed in answer["cond"])
    assert not all(seed["gradients_none_as_zero"] for seed in answer["cond"]), (
        "torch.cond's backward now keeps dropout's mask: reconsider cond for LayerDrop (predicate_layerdrop.py)"
    )


def test_a_tiny_bart_in_train_mode_compiles_whole(tmp_path: Path) -> None:
    """A real model as a regression gate: BART (transformers 5.23, tiny random config, LayerDrop 0.5) in train mode.

    Its encoder drops through ``to_drop`` (``modeling_bart.py:537``) and its decoder through ``continue``
    (``:660``); Dynamo also gives up on transformers' output-capturing wrapper (GB4347) once those frames
    break. With GM101's fixes no site is logged, ``fullgraph=True`` runs, and the eager outputs and gradients
    are the original's.
    """
    transformers = pytest.importorskip("transformers")
    result = run_cli(
        "verify", "hf:bart", "--train", "--unsafe-fixes", "--select", "GM101",
        "--hf-config", "encoder_layerdrop=0.5", "--hf-config", "decoder_layerdrop=0.5",
        "--json", "out.json", cwd=tmp_path,
    )  # fmt: skip
    assert result.code == 0, result.err
    (data,) = json.loads((tmp_path / "out.json").read_text())
    original, fixed = data["original"], data["fixed"]
    assert data["environment"]["transformers"] == transformers.__version__
    sites = sorted((Path(b["filename"]).name, b["line"], b["gb_id"]) for b in original["breaks"])
    assert sites == [("modeling_bart.py", 537, "GB0170"), ("modeling_bart.py", 660, "GB0170"),
                     ("output_capturing.py", 332, "GB4347")]  # fmt: skip
    assert fixed["logged_sites"] == 0 and fixed["breaks"] == []
    assert original["fullgraph"]["passes"] is False and fixed["fullgraph"]["passes"] is True
    assert data["outputs_equal"] is True and data["gradients_equal"] is True
