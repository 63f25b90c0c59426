"""GM401's dense rewrite of the transformers experts loop: which loops it takes, and what it writes.

The matched loop is ``rules/GM401/bad_moe_experts.py`` (its fixed twin, the
fixer's exact output, is checked by ``test_catalog.py`` and measured under
Dynamo by ``test_catalog_dynamo.py``). Each decline below is one edit of that
program to a spelling that has not been measured, or that the dense loop
would compute differently: it keeps the display-only description.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from graphmend_lint import fix_source, lint_source
from graphmend_lint.diagnostics import Applicability

REPO = Path(__file__).resolve().parents[1]
BAD = (REPO / "rules/GM401/bad_moe_experts.py").read_text()
FIXED = (REPO / "rules/GM401/fixed_moe_experts.py").read_text()
HIT = "expert_hit = torch.greater(expert_mask.sum(dim=(-1, -2)), 0).nonzero()"


def hit_fix(source: str):
    """The fix of the GM401 finding on the ``expert_hit`` line."""
    line = next(number for number, text in enumerate(source.splitlines(), 1) if text.strip().startswith("expert_hit ="))
    found = [d for d in lint_source(source) if d.code == "GM401" and d.start.line == line]
    assert len(found) == 1, found
    return found[0].fix


def edited(old: str, new: str) -> str:
    assert BAD.count(old) == 1, old
    return BAD.replace(old, new)


def test_the_matched_loop_gets_an_unsafe_fix_and_only_unsafe_fixes_apply_it() -> None:
    fix = hit_fix(BAD)
    assert fix.applicability is Applicability.UNSAFE and "num_experts/top_k" in fix.message
    assert fix_source(BAD).source == BAD
    assert fix_source(BAD, unsafe=True).source == FIXED


def test_after_the_fix_nothing_is_flagged_in_the_loop() -> None:
    assert [d.code for d in lint_source(FIXED)] == []


DECLINED = {
    # transformers 4.52's spelling: the mask row is squeezed and experts are modules
    "squeezed row": ("torch.where(expert_mask[expert_idx])", "torch.where(expert_mask[expert_idx].squeeze(0))"),
    "another hit filter": (HIT, HIT.replace(", 0)", ", 1)")),
    "not a one-hot mask": (
        "torch.nn.functional.one_hot(top_k_index, num_classes=self.num_experts + 1)",
        "top_k_index.unsqueeze(-1).expand(-1, -1, self.num_experts + 1)",
    ),
    "a matrix product with the weight on the left": (
        "nn.functional.linear(current_state, self.gate_up_proj[expert_idx])",
        "(self.gate_up_proj[expert_idx] @ current_state)",
    ),
    "a product with a tensor of the caller": (
        "current_hidden_states * top_k_weights[token_idx, top_k_pos, None]",
        "current_hidden_states * top_k_weights[token_idx, top_k_pos, None] * hidden_states",
    ),
    "a method the class does not define": (
        "current_hidden_states = self.act_fn(gate) * up",
        "current_hidden_states = self.mix(gate) * up",
    ),
    "a module call mixing rows": (
        "current_hidden_states = self.act_fn(gate) * up",
        "current_hidden_states = self.norm(gate) * up",
    ),
    "no routing weight": ("current_hidden_states * top_k_weights[token_idx, top_k_pos, None]", "current_hidden_states"),
    "a row-mixing reduction": (
        "current_hidden_states = self.act_fn(gate) * up",
        "current_hidden_states = self.act_fn(gate) * up.sum(0)",
    ),
    "the expert index unpacked otherwise": ("expert_idx = expert_idx[0]", "expert_idx = expert_idx.item()"),
    "the loop variable read after the loop": (
        "        return final_hidden_states\n",
        "        return final_hidden_states + current_hidden_states.sum()\n",
    ),
    # the dense loop sums a token's routes to an expert into one weight: only a weight that scales the
    # contribution linearly may be summed (a token listing an expert twice would differ otherwise)
    "the weight inside an activation": (
        "current_hidden_states = current_hidden_states * top_k_weights[token_idx, top_k_pos, None]",
        "current_hidden_states = self.act_fn(current_hidden_states * top_k_weights[token_idx, top_k_pos, None])",
    ),
    "the weight read twice": (
        "current_hidden_states * top_k_weights[token_idx, top_k_pos, None]",
        "current_hidden_states * top_k_weights[token_idx, top_k_pos, None] * top_k_weights[token_idx, top_k_pos, None]",
    ),
    "the weight added": (
        "current_hidden_states * top_k_weights[token_idx, top_k_pos, None]",
        "current_hidden_states + top_k_weights[token_idx, top_k_pos, None]",
    ),
    # the sentinel test stays a tensor branch once the loop is dense: the trial lint finds it (GM101)
    "a tensor sentinel": ("if expert_idx == self.num_experts:", "if expert_idx == top_k_index.max():"),
}


@pytest.mark.parametrize("change", DECLINED.values(), ids=list(DECLINED))
def test_other_spellings_are_declined(change: tuple[str, str]) -> None:
    fix = hit_fix(edited(*change))
    assert fix.applicability is Applicability.DISPLAY_ONLY and not fix.edits
    assert "expert dispatch loop" in fix.message


GATE_UP = (
    "            gate, up = nn.functional.linear(current_state, self.gate_up_proj[expert_idx]).chunk(2, dim=-1)\n"
    "            current_hidden_states = self.act_fn(gate) * up\n"
)
INTERLEAVED = (
    "            gate_up = nn.functional.linear(current_state, self.gate_up_proj[expert_idx])\n"
    "            gate, up = gate_up[..., {gate}], gate_up[..., {up}]\n"
    "            current_hidden_states = self.act_fn(gate) * up\n"
)
ACCEPTED = {
    "a product with the weight on the right": (
        "nn.functional.linear(current_state, self.gate_up_proj[expert_idx])",
        "(current_state @ self.gate_up_proj[expert_idx])",
    ),
    "interleaved halves": (GATE_UP, INTERLEAVED.format(gate="::2", up="1::2")),
    "the input's dtype": (".to(final_hidden_states.dtype)", ".to(hidden_states.dtype)"),
    "a bias and a float32 cast": (
        "current_hidden_states = self.act_fn(gate) * up",
        "current_hidden_states = self.act_fn(gate.float()) * (up + self.up_bias[expert_idx])",
    ),
}


@pytest.mark.parametrize("change", ACCEPTED.values(), ids=list(ACCEPTED))
def test_row_wise_spellings_are_rewritten(change: tuple[str, str]) -> None:
    fix = hit_fix(edited(*change))
    assert fix.applicability is Applicability.UNSAFE and fix.edits


def test_a_slice_of_rows_is_declined() -> None:
    source = edited(GATE_UP, INTERLEAVED.replace("[..., {gate}]", "[{gate}]").format(gate="::2", up="1::2"))
    assert hit_fix(source).applicability is Applicability.DISPLAY_ONLY


HELPER_CALL = "            current_hidden_states = self.gated(nn.functional.linear(current_state, self.gate_up_proj[expert_idx]))\n"


def with_helper(body: str, subclass: str = "") -> str:
    """BAD with the gate computed by ``self.gated(gate_up)``, a method whose body is *body*."""
    method = f"    def gated(self, gate_up):\n{body}\n    def forward("
    source = edited(GATE_UP, HELPER_CALL).replace("    def forward(", method, 1)
    return source.replace("\n\ndef make():", f"\n\n{subclass}\n\ndef make():", 1) if subclass else source


ROW_WISE_GATE = "        gate, up = gate_up.chunk(2, dim=-1)\n        return self.act_fn(gate.clamp(max=7.0)) * (up + 1)\n"


def test_a_row_wise_helper_method_is_followed() -> None:
    fix = hit_fix(with_helper(ROW_WISE_GATE))
    assert fix.applicability is Applicability.UNSAFE and fix.edits


HELPERS_DECLINED = {
    "a reduction over rows": ROW_WISE_GATE.replace("(up + 1)", "up.sum(0)"),
    "a call outside the vocabulary": ROW_WISE_GATE.replace("self.act_fn(", "self.norm("),
    "a statement that is not an assignment": "        print(gate_up)\n" + ROW_WISE_GATE,
}


@pytest.mark.parametrize("body", HELPERS_DECLINED.values(), ids=list(HELPERS_DECLINED))
def test_helpers_outside_the_vocabulary_are_declined(body: str) -> None:
    assert hit_fix(with_helper(body)).applicability is Applicability.DISPLAY_ONLY


def test_a_helper_a_subclass_overrides_is_declined() -> None:
    subclass = "class Mixing(Experts):\n    def gated(self, gate_up):\n        return gate_up.sum(0)\n"
    assert hit_fix(with_helper(ROW_WISE_GATE, subclass)).applicability is Applicability.DISPLAY_ONLY


def test_the_routed_name_avoids_names_the_function_uses() -> None:
    first = "        final_hidden_states = torch.zeros_like"
    source = edited(first, "        routed = 1\n" + first)
    fixed = fix_source(source, unsafe=True).source
    assert "routed_1 = expert_mask[expert_idx].any(0)" in fixed and "torch.where(routed_1[:, None]," in fixed


def test_the_dense_loop_keeps_gradients_and_no_inf_leaks_into_them() -> None:
    """Gradients equal within rounding, eagerly and compiled with ``fullgraph=True``; an expert that
    overflows on tokens it does not serve leaves outputs and gradients finite (a product with the
    routed mask would not). Measured in a fresh process (``expert_dispatch_worker.py``)."""
    pytest.importorskip("torch")
    worker = Path(__file__).with_name("expert_dispatch_worker.py")
    completed = subprocess.run([sys.executable, str(worker)], capture_output=True, text=True, timeout=600, cwd=REPO)
    assert completed.returncode == 0, completed.stderr[-4000:]
    measured = json.loads(completed.stdout)
    for row in measured["gradients"] + measured["biased_gradients"]:
        assert max(row.values()) < 1e-5, row
    hazard = measured["hazard"]
    assert hazard["sparse"] == hazard["dense"] == {"output_finite": True, "nonfinite_gradients": []}
    assert hazard["multiplied"]["output_finite"] is False
    assert measured["duplicate"] < 1e-5  # a token listing one expert twice: both routes' weights, as the original


def test_a_weight_in_the_contribution_itself_is_summed_over_the_routes() -> None:
    source = edited(
        "            current_hidden_states = current_hidden_states * top_k_weights[token_idx, top_k_pos, None]\n"
        "            final_hidden_states.index_add_(0, token_idx, current_hidden_states.to(final_hidden_states.dtype))\n",
        "            final_hidden_states.index_add_(0, token_idx, (current_hidden_states * top_k_weights[token_idx, "
        "top_k_pos, None]).to(final_hidden_states.dtype))\n",
    )
    fixed = fix_source(source, unsafe=True).source
    summed = "torch.where(expert_mask[expert_idx].T.bool(), top_k_weights, 0).sum(-1, keepdim=True)"
    assert f"torch.where(routed[:, None], (current_hidden_states * {summed}).to(final_hidden_states.dtype), 0)" in fixed
    assert "top_k_pos" not in fixed
