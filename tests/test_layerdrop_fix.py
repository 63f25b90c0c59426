"""GM101's LayerDrop fix (``graphmend_lint/fixes/predicate_layerdrop.py``) without torch: text and declines.

The three shapes transformers writes are rewritten exactly, a second ``--fix``
changes nothing, and everything not proven is declined with its reason (or,
for a flag that is no LayerDrop draw, left to GM101's other rewrites). The
Dynamo side (breaks, fullgraph, outputs, gradients) is in
``test_layerdrop_dynamo.py``.
"""

from __future__ import annotations

import textwrap

from graphmend_lint import fix_source, lint_source
from graphmend_lint.diagnostics import Applicability

HEADER = "import torch\nfrom torch import nn\n\n\nclass Encoder(nn.Module):\n    def forward(self, x, mask, synced_gpus=False):\n"


def program(loop: str) -> str:
    body = "hidden_states = torch.relu(x)\n" + textwrap.dedent(loop) + "return hidden_states\n"
    return HEADER + textwrap.indent(body, " " * 8) + "\n\ncompiled = torch.compile(Encoder())\n"


def gm101_fix_messages(source: str) -> list[str]:
    return [d.fix.message for d in lint_source(source, "encoder.py") if d.code == "GM101" and d.fix is not None]


def fixed(source: str) -> str:
    result = fix_source(source, "encoder.py", unsafe=True).source
    assert fix_source(result, "encoder.py", unsafe=True).source == result  # a second --fix changes nothing
    return result


CONTINUE = """\
for layer in self.layers:
    if self.training and self.layerdrop > 0.0:
        dropout_probability = torch.rand([])
        if dropout_probability < self.layerdrop:  # skip
            continue
    hidden_states = layer(hidden_states, mask)
"""


def test_continue_form_keeps_the_eager_continue_and_selects_when_compiling() -> None:
    assert fixed(program(CONTINUE)) == program("""\
for layer in self.layers:
    _gm_dropped = None
    if self.training and self.layerdrop > 0.0:
        dropout_probability = torch.rand([])
        if torch.compiler.is_compiling():
            _gm_dropped = dropout_probability < self.layerdrop
            _gm_kept_hidden_states = hidden_states
        elif dropout_probability < self.layerdrop:  # skip
            continue
    hidden_states = layer(hidden_states, mask)
    if _gm_dropped is not None:
        hidden_states = torch.where(_gm_dropped, _gm_kept_hidden_states, hidden_states)
""")


def test_the_fix_is_unsafe_and_plain_fix_leaves_the_code() -> None:
    source = program(CONTINUE)
    (diagnostic,) = [d for d in lint_source(source, "encoder.py") if d.code == "GM101"]
    assert diagnostic.fix is not None and diagnostic.fix.applicability is Applicability.UNSAFE
    assert fix_source(source, "encoder.py").source == source


def test_flag_form_selects_inside_the_gate() -> None:
    source = program("""\
for layer in self.layers:
    to_drop = False
    if self.training and self.layerdrop > 0.0:
        dropout_probability = torch.rand([])
        if dropout_probability < self.layerdrop:
            to_drop = True

    if not to_drop:
        hidden_states = layer(hidden_states, mask)
""")
    assert fixed(source) == program("""\
for layer in self.layers:
    to_drop = False
    _gm_dropped = None
    if self.training and self.layerdrop > 0.0:
        dropout_probability = torch.rand([])
        if torch.compiler.is_compiling():
            _gm_dropped = dropout_probability < self.layerdrop
            _gm_kept_hidden_states = hidden_states
        elif dropout_probability < self.layerdrop:
            to_drop = True

    if not to_drop:
        hidden_states = layer(hidden_states, mask)
        if _gm_dropped is not None:
            hidden_states = torch.where(_gm_dropped, _gm_kept_hidden_states, hidden_states)
""")


def test_gate_form_is_reported_and_the_layer_it_runs_anyway_is_not_selected() -> None:
    source = program("""\
for layer in self.layers:
    skip_the_layer = False
    if self.training and self.layerdrop > 0.0:
        dropout_probability = torch.rand([])
        skip_the_layer = dropout_probability < self.layerdrop
    if not skip_the_layer or synced_gpus:
        hidden_states = layer(hidden_states, mask)
""")
    reported = [(d.start.line, d.message) for d in lint_source(source, "encoder.py") if d.code == "GM101"]
    assert reported == [(13, "branch on a tensor value `not skip_the_layer` causes a graph break (only in training)")]
    assert fixed(source) == program("""\
for layer in self.layers:
    skip_the_layer = False
    _gm_dropped = None
    if self.training and self.layerdrop > 0.0:
        dropout_probability = torch.rand([])
        if torch.compiler.is_compiling():
            _gm_dropped = dropout_probability < self.layerdrop
            _gm_kept_hidden_states = hidden_states
        else:
            skip_the_layer = dropout_probability < self.layerdrop
    if not skip_the_layer or synced_gpus:
        hidden_states = layer(hidden_states, mask)
        if _gm_dropped is not None and not synced_gpus:
            hidden_states = torch.where(_gm_dropped, _gm_kept_hidden_states, hidden_states)
""")


def test_an_output_switch_in_the_layer_keeps_the_original_path_while_it_is_on() -> None:
    source = program(CONTINUE.replace(
        "    hidden_states = layer(hidden_states, mask)\n",
        "    outputs = layer(hidden_states, mask)\n    hidden_states = outputs[0]\n"
        "    if output_attentions:\n        attentions += (outputs[1],)\n",
    ))
    result = fixed(source)
    assert "        if torch.compiler.is_compiling() and not output_attentions:\n" in result
    assert result.endswith(
        "            if output_attentions:\n                attentions += (outputs[1],)\n"
        "            if _gm_dropped is not None:\n"
        "                hidden_states = torch.where(_gm_dropped, _gm_kept_hidden_states, hidden_states)\n"
        "        return hidden_states\n\n\ncompiled = torch.compile(Encoder())\n"
    )


def test_placeholders_on_the_dropped_side_select_in_the_else() -> None:
    source = program("""\
for layer in self.layers:
    to_drop = False
    if self.training and self.layerdrop > 0.0:
        dropout_probability = torch.rand([])
        if dropout_probability < self.layerdrop:
            to_drop = True
    if to_drop:
        outputs = (None, None)
    else:
        outputs = layer(hidden_states, mask)
        hidden_states = outputs[0]
    if output_attentions:
        attentions += (outputs[1],)
""")
    result = fixed(source)
    assert "                if torch.compiler.is_compiling() and not output_attentions:\n" in result
    assert (
        "                hidden_states = outputs[0]\n"
        "                if _gm_dropped is not None:\n"
        "                    hidden_states = torch.where(_gm_dropped, _gm_kept_hidden_states, hidden_states)\n"
        "            if output_attentions:\n"
    ) in result
    assert "does more than fill in placeholders" in gm101_fix_messages(source.replace("(None, None)", "(None, mask)"))[0]


def test_a_name_that_is_none_before_the_loop_takes_the_compiled_path_once_it_holds_a_value() -> None:
    """WavLM: the first layer computes ``position_bias``; until then the original code (and its break) runs."""
    source = program("position_bias = None\n" + CONTINUE.replace(
        "hidden_states = layer(hidden_states, mask)", "hidden_states, position_bias = layer(hidden_states, position_bias)"
    ))
    result = fixed(source)
    assert "                if torch.compiler.is_compiling() and position_bias is not None:\n" in result
    assert (
        "                    _gm_kept_hidden_states = hidden_states\n"
        "                    _gm_kept_position_bias = position_bias\n"
        "                elif dropout_probability < self.layerdrop:  # skip\n"
    ) in result
    assert "                position_bias = torch.where(_gm_dropped, _gm_kept_position_bias, position_bias)\n" in result


def test_unproven_shapes_are_declined_with_the_reason() -> None:
    cases = {
        # the skipped statements hold a call for its effect
        CONTINUE.replace("    hidden_states = layer", "    self.seen.append(layer)\n    hidden_states = layer"):
            "only assignments to names and `if <flag>:` on a Python flag are rewritten",
        # the name the layer passes on holds neither a tensor nor `None` before the loop
        "position_bias = []\n" + CONTINUE.replace(
            "hidden_states = layer(hidden_states, mask)", "hidden_states, position_bias = layer(hidden_states, position_bias)"
        ): "`position_bias` is not known to hold a tensor or `None` before the loop",
        # the guard has an `else`
        CONTINUE.replace("    hidden_states = layer", "    else:\n        x = x + 1\n    hidden_states = layer"):
            "`if` guards",
        # the draw is not torch.rand
        CONTINUE.replace("torch.rand([])", "hidden_states.mean()"): "not a `torch.rand` draw",
        # statements after the LayerDrop `if` inside its guard
        CONTINUE.replace("            continue\n", "            continue\n        mask = mask * 2\n"):
            "not the last statement of `if` guards",
    }
    for loop, reason in cases.items():
        messages = gm101_fix_messages(program(loop))
        assert messages and reason in messages[0], (loop, messages)


def test_a_tensor_flag_that_is_no_layerdrop_draw_keeps_the_other_rewrites() -> None:
    source = program("""\
for layer in self.layers:
    keep = hidden_states.mean() > 0
    if not keep:
        hidden_states = torch.relu(hidden_states)
""")
    assert "torch.where(~keep, torch.relu(hidden_states), hidden_states)" in fixed(source)
