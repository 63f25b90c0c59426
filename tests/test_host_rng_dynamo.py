"""GM204's host-RNG and warning-filter programs against real Dynamo (torch 2.13, CPU): breaks at the finding lines.

``np.random`` draws and ``torch.manual_seed`` were added to GM204 from
breaks seen in real code (timm's Mixup, transformers' Wav2Vec2/HuBERT
SpecAugment, Reformer's reseeding). Each catalog program is measured in a
subprocess (``catalog_dynamo_worker.py``); the lines Dynamo logs must be the
lines GM204 reports, with the GB ids the rule declares, and the negative
program (draws Dynamo traces as torch ops) must log none.
"""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("torch")

from catalog_cases import findings, measure_catalog  # noqa: E402

pytestmark = pytest.mark.dynamo

#: ``(line, GB id)`` Dynamo logs per program: ``rand() < p`` is a data-dependent operator, ``beta`` unsupported.
BREAKS = {
    "GM204/bad_numpy_random.py": {(8, "GB0033"), (9, "GB0294")},
    "GM204/bad_manual_seed.py": {(13, "GB0007")},
    "GM204/neg_numpy_random_traced.py": set(),
    # Python arithmetic on a draw Dynamo traces (Mixup's `1 - lam`); scaling tensors by draws does not break
    "GM204/bad_random_draw_arithmetic.py": {(17, "GB0213")},
    "GM204/neg_random_draw_scales_tensor.py": set(),
    # Python needs a draw's value: the branch breaks, then int() of a fresh draw; the slice after the break
    # reads a draw the resumed frame received as a plain int (no break)
    "GM204/bad_random_draw_uses.py": {(16, "GB0170"), (18, "GB0178")},
    # the SpecAugment plan's draws; its fixed twin (one custom op) is checked with the other pairs
    "GM204/bad_spec_augment_plan.py": {(16, "GB0033"), (23, "GB0033")},
    # a warning filter inside `catch_warnings`: the skipped `warnings` call (GB0007, placed at the program's call
    # of warnings.py) leaves a context Dynamo cannot rebuild, logged at the call too (GB0092)
    "GM204/bad_quiet_meshgrid.py": {(16, "GB0007"), (16, "GB0092")},
    # a Python heap of beam candidates: `heapq` is a skipped module
    "GM204/bad_beam_heap.py": {(20, "GB0007")},
    # methods of a NumPy Generator kept on the object: unsupported method calls
    "GM204/bad_numpy_generator_policy.py": {(19, "GB0156"), (20, "GB0156")},
}


@pytest.fixture(scope="module")
def measured() -> dict[str, Any]:
    return measure_catalog(sorted(BREAKS))


@pytest.mark.parametrize("name", sorted(BREAKS))
def test_breaks_are_where_gm204_reports(name: str, measured: dict[str, Any]) -> None:
    logged = {tuple(site) for site in measured["programs"][name]["attributed"]}
    assert logged == BREAKS[name]
    assert {line for line, _ in logged} == {line for line, _ in findings(name, ["GM204"])}
