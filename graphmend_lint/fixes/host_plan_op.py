"""Run a NumPy plan as one ``torch.library.custom_op``: its draws leave the graph without breaking it.

For a helper :mod:`graphmend_lint.analysis.host_plans` accepts, the fix
writes, right after the helper:

* ``_<helper>_on_host``, a custom op that calls the helper and converts its
  array with the ``device`` and ``dtype`` the call site gave ``torch.tensor``;
* its fake, which repeats the helper's shape assignments and returns
  ``torch.empty(shape, device=device, dtype=dtype)``, so Dynamo knows the
  output without running the plan;

and each traced ``name = helper(...)`` / ``name = torch.tensor(name, ...)``
pair becomes ``name = _<helper>_on_host(..., device=..., dtype=...)``.

Measured on torch 2.13 (tiny wav2vec2 in training): the NumPy sites go, and
the compiled output equals eager's with the eager, ``aot_eager`` and inductor
backends (``docs/benchmarks.md``). A ``leaf_function`` would be shorter but
inductor rejects it. The fix is unsafe: the op is registered process-wide
under a name made from the module's ``__name__`` (re-importing the module
registers it again, which torch 2.13 allows), the annotations it writes
(``X | None``) need Python 3.10 unless the module spells optionals with
``Optional``, and under compile the draws now follow eager's order where they
did not before.
"""

from __future__ import annotations

from astroid import nodes

from graphmend_lint.analysis.host_plans import HostPlan
from graphmend_lint.context import FileAnalysis
from graphmend_lint.diagnostics import Applicability, Edit, Fix, Position
from graphmend_lint.fixes.host_sync import node_text
from graphmend_lint.fixes.statement_lines import delete_lines, owns_its_lines
from graphmend_lint.fixes.torch_name import torch_name_at

MESSAGE = "Run `{helper}` as one graph op (`torch.library.custom_op`): its NumPy draws run at run time, in eager's order"
#: torch.library.custom_op with register_fake.
MINIMUM_TORCH = (2, 4)


def host_plan_fix(analysis: FileAnalysis, plan: HostPlan) -> Fix | None:
    """The op, its fake and the rewritten call sites as one unsafe fix, or ``None`` when a name is taken."""
    if analysis.settings.target_torch_version < MINIMUM_TORCH:
        return None
    helper = plan.helper
    op = f"_{helper.name.lstrip('_')}_on_host"
    torch = torch_name_at(analysis, helper)
    module_names = analysis.module.locals
    if torch is None or torch.edits or op in module_names or f"{op}_fake" in module_names:
        return None
    if not all(owns_its_lines(analysis, call.conversion) for call in plan.calls):
        return None  # the conversion is cut whole
    definitions = _definitions(analysis, plan, op, torch.name)
    after_helper = Position((helper.end_lineno or helper.lineno) + 1, 0)
    edits = [Edit(after_helper, after_helper, definitions)]
    for call in plan.calls:
        edits.extend(_call_site(analysis, call.call, call.conversion, op, call.device, call.dtype))
    return Fix(edits=tuple(edits), applicability=Applicability.UNSAFE, message=MESSAGE.format(helper=helper.name))


def _definitions(analysis: FileAnalysis, plan: HostPlan, op: str, torch: str) -> str:
    helper = plan.helper.name
    optional = "Optional[{}]" if plan.spells_optional else "{} | None"
    declared = [
        f"{p.name}: {_optional_spelling(p.op_type, optional).format(torch=torch)}"
        + ("" if p.default is None else f" = {p.default}")
        for p in plan.parameters
    ]
    keyword_only = [f"device: {optional.format(f'{torch}.device')}", f"dtype: {torch}.dtype"]
    passed = ", ".join(f"tuple({p.name})" if p.as_tuple else p.name for p in plan.parameters)
    fake_parameters = [p.name + ("" if p.default is None else f"={p.default}") for p in plan.parameters]
    prelude = "".join(f"    {node_text(analysis, statement)}\n" for statement in plan.shape_prelude)
    taken = {helper, *(p.name for p in plan.parameters)}
    local = next(name for name in ("array", "planned", "host_array", f"{helper}_array") if name not in taken)
    op_name = f'"graphmend::" + __name__.replace(".", "_").strip("_") + "_{helper.lstrip("_")}"'
    return (
        f"\n\n@{torch}.library.custom_op({op_name}, mutates_args=())\n"
        f"def {op}{_parameter_list([*declared, '*', *keyword_only])} -> {torch}.Tensor:\n"
        f'    """`{helper}` as one graph op: Dynamo keeps it whole, and its NumPy draws run at run time."""\n'
        f"    {local} = {helper}({passed})\n"
        f"    return {torch}.tensor({local}, device=device, dtype=dtype)\n"
        f"\n\n@{op}.register_fake\n"
        f"def {op}_fake{_parameter_list([*fake_parameters, '*', 'device', 'dtype'])}:\n"
        f"{prelude}"
        f"    return {torch}.empty({plan.shape.as_string()}, device=device, dtype=dtype)\n"
    )


def _parameter_list(parameters: list[str]) -> str:
    """``(a, b)``, or one parameter a line when that would be long."""
    one_line = f"({', '.join(parameters)})"
    return one_line if len(one_line) <= 80 else "(\n" + "".join(f"    {p},\n" for p in parameters) + ")"


def _optional_spelling(op_type: str, optional: str) -> str:
    """``X | None`` as the module spells optionals."""
    return optional.format(op_type.removesuffix(" | None")) if op_type.endswith(" | None") else op_type


def _call_site(
    analysis: FileAnalysis,
    call: nodes.Call,
    conversion: nodes.Assign,
    op: str,
    device: nodes.NodeNG | None,
    dtype: nodes.NodeNG,
) -> list[Edit]:
    """Call the op instead of the helper, with the conversion's device and dtype, and drop the conversion."""
    keywords = [f"device={'None' if device is None else node_text(analysis, device)}", f"dtype={node_text(analysis, dtype)}"]
    arguments = [*call.args, *(keyword.value for keyword in call.keywords or ())]
    last_argument = max(arguments, key=lambda node: (node.end_lineno or 0, node.end_col_offset or 0))
    last = analysis.end_of(last_argument)
    line = analysis.source.line(last.line)
    # a call written one argument a line gets its new keywords the same way
    separator = ", " if call.lineno == last.line else ",\n" + line[: len(line) - len(line.lstrip())]
    extra = "".join(separator + keyword for keyword in keywords)
    return [
        Edit(analysis.start_of(call.func), analysis.end_of(call.func), op),
        Edit(last, last, extra),
        delete_lines(conversion),
    ]
