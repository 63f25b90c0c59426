"""Measure GM401's dense experts rewrite beyond outputs: gradients, compiled gradients, the inf hazard.

Run as ``python tests/expert_dispatch_worker.py`` (a process of its own, so no
test's Dynamo state can change the result). It loads the catalog pair
``rules/GM401/bad_moe_experts.py`` / ``fixed_moe_experts.py`` with the same
weights and prints one JSON object:

* ``gradients``: per input set, the largest relative difference between the
  sparse and the dense loop of every gradient (parameters, hidden states,
  routing weights), eagerly and with the dense loop compiled
  (``fullgraph=True``, ``aot_eager``, so autograd is traced too);
* ``hazard``: an expert no token is routed to whose output overflows to
  ``inf``: is the output finite, and which gradients are finite, in the
  sparse loop, the dense loop, and a dense loop that multiplies by the routed
  mask instead of ``torch.where``;
* ``duplicate``: the output difference when a token lists one expert twice
  (both loops weight its contribution by both routes);
* ``biased_gradients``: ``gradients`` for the gpt-oss spelling of the loop
  (``bad_moe_biased_experts.py`` / ``fixed_moe_biased_experts.py``).
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import torch

CATALOG = Path(__file__).resolve().parents[1] / "rules" / "GM401"


def _load(name: str) -> Any:
    spec = importlib.util.spec_from_file_location(name, CATALOG / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _gradients(model: torch.nn.Module, args: tuple[torch.Tensor, ...]) -> tuple[torch.Tensor, list[torch.Tensor]]:
    hidden, index, weights = (a.detach().clone() for a in args)
    hidden.requires_grad_(True)
    weights.requires_grad_(True)
    model.zero_grad(set_to_none=False)
    out = model(hidden, index, weights)
    probe = torch.linspace(-1.0, 1.0, out.numel()).view_as(out)  # a loss that weighs every element differently
    (out * probe).sum().backward()
    return out.detach(), [p.grad.clone() for p in model.parameters()] + [hidden.grad, weights.grad]


def _relative(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a - b).abs().max() / a.abs().max().clamp_min(1e-12)) if a.numel() else 0.0


def _compare(bad: Any, fixed: Any) -> list[dict[str, float]]:
    sparse, _ = bad.make()
    dense, inputs = fixed.make()
    dense.load_state_dict(sparse.state_dict())
    compiled = torch.compile(dense, fullgraph=True, backend="aot_eager")
    rows = []
    for args in inputs:
        out, grads = _gradients(sparse, args)
        out_dense, grads_dense = _gradients(dense, args)
        out_compiled, grads_compiled = _gradients(compiled, args)
        rows.append(
            {
                "output": _relative(out, out_dense),
                "gradient": max(_relative(g, h) for g, h in zip(grads, grads_dense)),
                "compiled_output": _relative(out, out_compiled),
                "compiled_gradient": max(_relative(g, h) for g, h in zip(grads, grads_compiled)),
            }
        )
    return rows


def _multiplied(self: Any, hidden_states: torch.Tensor, top_k_index: torch.Tensor, top_k_weights: torch.Tensor) -> Any:
    """The dense loop masked by multiplying with the routed vector instead of ``torch.where``."""
    final = torch.zeros_like(hidden_states)
    mask = torch.nn.functional.one_hot(top_k_index, num_classes=self.num_experts + 1).permute(2, 1, 0)
    for expert in range(self.num_experts):
        positions = mask[expert].argmax(0)
        routed = mask[expert].any(0)
        gate, up = torch.nn.functional.linear(hidden_states, self.gate_up_proj[expert]).chunk(2, dim=-1)
        out = torch.nn.functional.linear(self.act_fn(gate) * up, self.down_proj[expert])
        final = final + out * top_k_weights[torch.arange(len(positions)), positions, None] * routed[:, None]
    return final


def _hazard(bad: Any, fixed: Any) -> dict[str, dict[str, Any]]:
    sparse, inputs = bad.make()
    hidden = inputs[0][0]
    weights, index = torch.randn(len(hidden), 3).softmax(-1).topk(2, dim=-1)  # no token is routed to expert 3 ...
    with torch.no_grad():
        # ... whose output overflows to inf for every token: gate = up = the row sum s, so each
        # intermediate unit is silu(s) * s >= 0, and their sum times 3e38 passes float32's max
        # (small random weights alone left it finite, and the control below then proved nothing)
        sparse.gate_up_proj[3].fill_(1.0)
        sparse.down_proj[3].fill_(3e38)
    dense, _ = fixed.make()
    dense.load_state_dict(sparse.state_dict())
    multiplied, _ = fixed.make()
    multiplied.load_state_dict(sparse.state_dict())
    multiplied.forward = _multiplied.__get__(multiplied)
    names = [name for name, _ in sparse.named_parameters()] + ["hidden_states", "top_k_weights"]
    result = {}
    for label, model in (("sparse", sparse), ("dense", dense), ("multiplied", multiplied)):
        out, grads = _gradients(model, (hidden, index, weights))
        result[label] = {
            "output_finite": bool(out.isfinite().all()),
            "nonfinite_gradients": [name for name, g in zip(names, grads) if not g.isfinite().all()],
        }
    return result


def _duplicate(bad: Any, fixed: Any) -> float:
    """Relative output difference when a token lists the same expert twice (``topk`` never does, a hash
    router's table may)."""
    sparse, inputs = bad.make()
    dense, _ = fixed.make()
    dense.load_state_dict(sparse.state_dict())
    hidden, index, weights = inputs[0]
    index = index.clone()
    index[0, 1] = index[0, 0]
    with torch.no_grad():
        return _relative(sparse(hidden, index, weights), dense(hidden, index, weights))


def main() -> None:
    torch.manual_seed(0)
    bad, fixed = _load("bad_moe_experts"), _load("fixed_moe_experts")
    result = {
        "gradients": _compare(bad, fixed),
        "hazard": _hazard(bad, fixed),
        "duplicate": _duplicate(bad, fixed),
        "biased_gradients": _compare(_load("bad_moe_biased_experts"), _load("fixed_moe_biased_experts")),
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
