"""Measure GM101's LayerDrop fix on a (bad, fixed) catalog pair in train mode, in a process of its own.

Run as ``python tests/layerdrop_worker.py BAD FIXED``; prints one JSON object:

* ``eager``: per seed, whether the fixed program's outputs, parameter gradients
  (``None`` where the original left ``None``) and the RNG state after forward
  and backward are exactly the original's, on every input set;
* ``sites``: the break lines Dynamo logs in each file, in train mode;
* ``fullgraph``: ``torch.compile(..., fullgraph=True)`` forward and backward, per
  backend (``None`` when it ran, else the error);
* ``compiled_path``: the fixed program compiled (backends ``eager`` and
  ``aot_eager``) against the same program run eagerly with
  ``torch.compiler.is_compiling`` forced to ``True``, so the compiled path's
  outputs and gradients are checked against plain eager autograd of the same
  code, on the same random numbers. ``aot_eager`` runs the first input set
  only: where a Python operand runs the layer anyway (``synced_gpus=True``)
  the draw is unused, AOT autograd drops it as dead code and every later
  dropout mask shifts (measured: outputs differ by up to 1.87);
* ``cond``: the ``torch.cond`` alternative the fix does not use (the rest of
  the loop body as cond's false branch), against the original in eager mode,
  on the first input set.
"""

from __future__ import annotations

import importlib.util
import itertools
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import torch

from graphmend_lint.verify.breaks import capture_breaks_over

SEEDS = range(4)


def _load(path: str, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _step(
    module: ModuleType, seed: int, index: int, wrap: Any = None
) -> tuple[torch.Tensor, list[torch.Tensor | None], torch.Tensor]:
    """One training step's forward and backward from a fresh model: output, gradients, RNG state after."""
    model, input_sets = module.make()
    args = input_sets[index]
    fn = model if wrap is None else wrap(model)
    torch.manual_seed(seed)
    output = fn(*args)
    output.pow(2).mean().backward()
    gradients = [p.grad for p in model.parameters()]
    return output.detach(), gradients, torch.get_rng_state()


def _same_gradients(first: list[torch.Tensor | None], second: list[torch.Tensor | None], none_is_zero: bool) -> bool:
    for a, b in zip(first, second, strict=True):
        if none_is_zero:
            a = torch.zeros_like(b) if a is None and b is not None else a
            b = torch.zeros_like(a) if b is None and a is not None else b
        if (a is None) != (b is None) or (a is not None and not torch.equal(a, b)):
            return False
    return True


def _compare(
    reference: ModuleType, candidate: ModuleType, wrap: Any = None, force_compiling: bool = False, first_only: bool = False
) -> list[dict[str, bool]]:
    """Per seed and input set (the first only with *first_only*): which of outputs, gradients, RNG state match."""
    results = []
    indices = range(1) if first_only else range(len(reference.make()[1]))
    for seed, index in itertools.product(SEEDS, indices):
        expected = _step(reference, seed, index)
        if force_compiling:
            saved = torch.compiler.is_compiling
            torch.compiler.is_compiling = lambda: True
            try:
                expected = _step(candidate, seed, index)
            finally:
                torch.compiler.is_compiling = saved
        actual = _step(candidate, seed, index, wrap)
        results.append(
            {
                "outputs": torch.equal(expected[0], actual[0]),
                "gradients": _same_gradients(expected[1], actual[1], none_is_zero=False),
                "gradients_none_as_zero": _same_gradients(expected[1], actual[1], none_is_zero=True),
                "rng": torch.equal(expected[2], actual[2]),
            }
        )
    return results


def _sites(module: ModuleType, path: str) -> list[list[Any]]:
    """Distinct ``[line, GB id]`` Dynamo logs in *path* over every input set."""
    model, input_sets = module.make()
    torch.manual_seed(0)
    report = capture_breaks_over(model, [(tuple(args), {}) for args in input_sets])
    return sorted([site.line, site.gb_id] for site in report.sites if Path(site.filename).resolve() == Path(path).resolve())


def _fullgraph(module: ModuleType, backend: str) -> str | None:
    """``None`` when forward and backward compile with ``fullgraph=True`` on every input set, else the first error."""
    for args in module.make()[1]:
        torch._dynamo.reset()
        model, _ = module.make()
        try:
            torch.compile(model, backend=backend, fullgraph=True)(*args).pow(2).mean().backward()
        except Exception as error:  # the answer is the error itself
            return f"{type(error).__name__}: {(str(error).splitlines() or [''])[0][:160]}"
    return None


def _cond_variant(bad: ModuleType) -> ModuleType:
    """The bad program with its loop's LayerDrop as ``torch.cond`` (skip: a clone; run: the layer)."""

    def forward(self: Any, inputs_embeds: torch.Tensor, attention_mask: torch.Tensor, *_: Any) -> torch.Tensor:
        hidden_states = self.embed(inputs_embeds)
        for layer in self.layers:

            def run(hidden_states: torch.Tensor, layer: Any = layer) -> torch.Tensor:
                output = layer(hidden_states, attention_mask)
                return output[0] if isinstance(output, tuple) else output

            if self.training and self.layerdrop > 0.0:
                dropout_probability = torch.rand([])
                skip = dropout_probability < self.layerdrop
                hidden_states = torch.cond(skip, lambda h: h.clone(), run, (hidden_states,))
            else:
                hidden_states = run(hidden_states)
        return hidden_states

    variant = ModuleType("layerdrop_cond_variant")
    model, _ = bad.make()
    cls = type(model)
    patched = type(f"{cls.__name__}Cond", (cls,), {"forward": forward})

    def make() -> Any:
        made, input_sets = bad.make()
        made.__class__ = patched
        return made, input_sets

    variant.make = make  # type: ignore[attr-defined]
    return variant


def main() -> None:
    bad_path, fixed_path = sys.argv[1], sys.argv[2]
    bad, fixed = _load(bad_path, "layerdrop_bad"), _load(fixed_path, "layerdrop_fixed")
    answer = {
        "eager": _compare(bad, fixed),
        "sites": {"bad": _sites(bad, bad_path), "fixed": _sites(fixed, fixed_path)},
        "fullgraph": {
            "bad": _fullgraph(bad, "eager"),
            "fixed": {backend: _fullgraph(fixed, backend) for backend in ("eager", "aot_eager")},
        },
        "compiled_path": {
            backend: _compare(
                fixed,
                fixed,
                wrap=lambda m, backend=backend: torch.compile(m, backend=backend, fullgraph=True),
                force_compiling=True,
                first_only=backend == "aot_eager",
            )
            for backend in ("eager", "aot_eager")
        },
        # the variant calls each layer as `layer(hidden_states, attention_mask)`: not WavLM's position-bias layers
        "cond": None if "--no-cond" in sys.argv[3:] else _compare(bad, _cond_variant(bad), first_only=True),
    }
    print(json.dumps(answer))


if __name__ == "__main__":
    main()
