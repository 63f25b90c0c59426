"""A branch ``if <parameter> == "<text>":`` (or its ``else``) that no call of its function in the file takes.

transformers' BigBird switches attention with ``set_attention_type(value)``:
``if value == "original_full": <build full attention> else: <build block
sparse attention>``, and its compiled ``forward`` only ever passes
``"original_full"`` (through three methods of the same name that forward
``value``). A finding in the ``else`` would name a break Dynamo never logs.

The answer is ``True`` only when every call site named like the function
in the (pruned) tree passes a string constant, or forwards a parameter of
the same name from a function of the same name, and none of those
constants takes the branch. Anything else (a computed argument, ``*args``,
no call site at all) answers ``False``: the finding stays.
"""

from __future__ import annotations

from astroid import nodes

from graphmend_lint.analysis.walk import descendants

_CALLS_ATTRIBUTE = "_graphmend_calls_by_name"


def _calls_named(module: nodes.Module, name: str) -> list[nodes.Call]:
    """Calls of ``name(...)`` / ``<x>.name(...)`` in *module*, indexed once per tree."""
    index: dict[str, list[nodes.Call]] | None = module.__dict__.get(_CALLS_ATTRIBUTE)
    if index is None:
        index = {}
        for call in descendants(module, nodes.Call):
            func = call.func
            called = func.name if isinstance(func, nodes.Name) else getattr(func, "attrname", None)
            if called:
                index.setdefault(called, []).append(call)
        module.__dict__[_CALLS_ATTRIBUTE] = index
    return index.get(name, [])


def _guard(node: nodes.NodeNG) -> tuple[nodes.If, bool] | None:
    """The innermost ``if`` holding *node* in its function, and whether *node* is in its ``else``."""
    child, parent = node, node.parent
    while parent is not None and not isinstance(parent, (nodes.FunctionDef, nodes.Lambda, nodes.ClassDef)):
        if isinstance(parent, nodes.If) and child is not parent.test:
            return parent, child in parent.orelse
        child, parent = parent, parent.parent
    return None


def _compared_parameter(test: nodes.NodeNG, function: nodes.FunctionDef) -> tuple[str, str, bool] | None:
    """``(parameter, text, equal)`` for ``parameter == "text"`` (``equal``) or ``parameter != "text"``."""
    if not (isinstance(test, nodes.Compare) and len(test.ops) == 1 and isinstance(test.left, nodes.Name)):
        return None
    operator, right = test.ops[0]
    if operator not in {"==", "!="} or not (isinstance(right, nodes.Const) and isinstance(right.value, str)):
        return None
    if test.left.name not in {a.name for a in function.args.args or ()}:
        return None
    return test.left.name, right.value, operator == "=="


def passed_argument(call: nodes.Call, function: nodes.FunctionDef, parameter: str) -> nodes.NodeNG | None:
    """The expression *call* passes for *parameter* (its default when it passes none), else ``None``."""
    if any(isinstance(a, nodes.Starred) for a in call.args) or any(k.arg is None for k in call.keywords or ()):
        return None
    for keyword in call.keywords or ():
        if keyword.arg == parameter:
            return keyword.value
    positional = [a.name for a in function.args.args or ()]
    if positional and positional[0] in {"self", "cls"} and isinstance(call.func, nodes.Attribute):
        positional = positional[1:]
    index = positional.index(parameter)
    if index < len(call.args):
        return call.args[index]
    defaults = function.args.defaults or []
    offset = len(positional) - len(defaults)
    return defaults[index - offset] if index >= offset else None


def _passed_texts(function: nodes.FunctionDef, parameter: str) -> set[str] | None:
    """Every string the file's calls of *function*'s name pass for *parameter*; ``None`` when one is not a constant."""
    texts: set[str] = set()
    for call in _calls_named(function.root(), function.name):
        argument = passed_argument(call, function, parameter)
        if isinstance(argument, nodes.Const) and isinstance(argument.value, str):
            texts.add(argument.value)
            continue
        caller = call.frame()
        forwarded = (
            isinstance(argument, nodes.Name)
            and argument.name == parameter
            and isinstance(caller, nodes.FunctionDef)
            and caller.name == function.name
            and parameter in {a.name for a in caller.args.args or ()}
        )
        if not forwarded:
            return None
    return texts or None


def branch_never_taken(node: nodes.NodeNG) -> bool:
    """*node* sits in a branch on a string parameter that no call of its function in this file takes."""
    function = node.frame()
    guard = _guard(node)
    if guard is None or not isinstance(function, nodes.FunctionDef):
        return False
    branch, in_else = guard
    compared = _compared_parameter(branch.test, function)
    if compared is None:
        return False
    parameter, text, equal = compared
    passed = _passed_texts(function, parameter)
    if passed is None:
        return False
    return not any(((value == text) is equal) is not in_else for value in passed)
