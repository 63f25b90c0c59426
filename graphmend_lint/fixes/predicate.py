"""Predicated control flow: GraphMend's first transformation.

A branch on a tensor's value becomes a select on the device, so Dynamo traces
both sides and the graph stays whole:

* both branches assign → ``x = torch.where(c, a, b)`` (one ``where`` per name,
  ``elif`` chains nest);
* an ``else``-less update ``if c: x = f(x)`` → ``x = torch.where(c, f(x), x)``;
* both branches return → ``return torch.where(c, a, b)`` (tuples element-wise),
  also for ``if c: return a`` followed by ``return b``;
* identical trailing statements of both branches run once after the select,
  and a call that differs only in tensor arguments selects those arguments
  (the Phi-3 LongRoPE ``register_buffer`` pattern);
* ``a if c else b`` → ``torch.where(c, a, b)``;
* ``if c: raise E(msg)`` → ``torch._assert_async(~(c), msg)`` when compiling, the original
  ``if`` (now an ``elif``) when eager (GM104, opt-in: the compiled error is a ``RuntimeError``);
* an ``if`` whose branch values call submodules or user functions →
  ``torch.cond`` with local branch functions, built in
  :mod:`graphmend_lint.fixes.predicate_cond`, so only the taken side runs
  (:mod:`graphmend_lint.fixes.predicate_branch` chooses between the two).

The rule decides *whether* to offer a fix; this module decides *how*, and
declines (returning a reason) whenever it cannot prove the rewrite keeps
meaning: side effects, control leaving one branch, non-tensor values, names
read after being re-bound, unknown callees.
"""

from __future__ import annotations

import ast
import io
import textwrap
import tokenize
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from astroid import nodes

from graphmend_lint.analysis.values import Kind, ValueOracle
from graphmend_lint.analysis.walk import dotted
from graphmend_lint.context import FileAnalysis
from graphmend_lint.diagnostics import Applicability, Edit, Fix, Position
from graphmend_lint.fixes.torch_name import torch_name_at

#: Tensor methods and torch functions that return booleans: usable as a ``where`` condition as is.
BOOLEAN_PRODUCERS = frozenset(
    {"any", "all", "isnan", "isinf", "isfinite", "isneginf", "isposinf", "logical_and", "logical_or",
     "logical_not", "logical_xor", "eq", "ne", "gt", "lt", "ge", "le", "greater", "less", "equal_",
     "isclose", "signbit", "bool"}
)  # fmt: skip
#: Calls whose effects must not run on the unselected side, or whose values are host data.
IMPURE_CALLS = frozenset(
    {"item", "tolist", "numpy", "nonzero", "backward", "register_buffer", "register_parameter", "append",
     "extend", "pop", "update", "setdefault", "manual_seed", "save", "print"}
)  # fmt: skip
_ATOMIC = (nodes.Name, nodes.Attribute, nodes.Const, nodes.Call, nodes.Subscript)


#: Tensor methods and torch functions that change a tensor's shape (or reduce it).
SHAPE_OPERATIONS = frozenset(
    {"sum", "mean", "max", "min", "amax", "amin", "prod", "std", "var", "norm", "any", "all", "argmax", "argmin",
     "logsumexp", "median", "mode", "count_nonzero", "view", "view_as", "reshape", "reshape_as", "flatten",
     "unflatten", "squeeze", "unsqueeze", "transpose", "permute", "t", "expand", "expand_as", "repeat",
     "repeat_interleave", "narrow", "cat", "concat", "concatenate", "stack", "split", "chunk", "unbind", "gather",
     "index_select", "matmul", "mm", "bmm", "einsum", "diag", "diagonal", "topk", "movedim", "swapaxes", "tile",
     "pad", "interpolate", "select", "take", "masked_select", "nonzero", "unique"}
)  # fmt: skip


#: Calls with no effect whose results are Python values: a branch-local assignment of them may be hoisted.
PURE_STATIC_CALLS = frozenset(
    {"torch.finfo", "torch.iinfo", "min", "max", "abs", "int", "float", "round", "len", "math.sqrt", "math.log"}
)
FULL_REDUCTIONS = frozenset({"sum", "mean", "max", "min", "amax", "amin", "prod", "std", "var", "norm", "any", "all"})


class Declined(Exception):
    """The rewrite cannot be proven to keep meaning; the message says why."""


@dataclass(frozen=True)
class Rewrite:
    """Replacement text for a source range, whether it is safe, and the fix message when it is not the rule's."""

    start: Position
    end: Position
    content: str
    safe: bool
    message: str | None = None


class Predicator:
    """Build predicated rewrites for one file."""

    def __init__(self, analysis: FileAnalysis, node: nodes.NodeNG) -> None:
        self.analysis = analysis
        self.values: ValueOracle = analysis.values
        torch_name = torch_name_at(analysis, node)
        if torch_name is None:
            raise Declined("the name `torch` is bound to something else here, so `torch.where` has no name")
        self.torch = torch_name.name
        #: ``import torch``, when the rewrite names torch where nothing imports it
        self.import_edits = torch_name.edits

    # -- public rewrites ------------------------------------------------------------

    def where_rewrite(self, node: nodes.If) -> Rewrite:
        """Rewrite a tensor-dependent ``if`` that assigns or returns tensors as ``torch.where`` selects."""
        returns = self._return_pair(node)
        if returns is not None:
            return self._predicated_return(node, *returns)
        condition = self.condition(node.test)
        statements, safe = self.assignments(node, condition)
        return self.statement_rewrite(node, node, statements, safe)

    def conditional_expression(self, node: nodes.IfExp) -> Rewrite:
        condition = self.condition(node.test)
        self._check_selectable(node.body, node.orelse)
        text = self._where(condition, self.text(node.body), self.text(node.orelse))
        safe = self._cheap_same_dtype(node.body, node.orelse)
        return Rewrite(self.analysis.start_of(node), self.analysis.end_of(node), text, safe)

    def validation_guard(self, node: nodes.If) -> Rewrite:
        """``if c: raise E(msg)`` checked on the device when compiling, unchanged when eager.

        Inserts ``if torch.compiler.is_compiling(): torch._assert_async(~(c), msg)`` and turns the
        original ``if`` into its ``elif``, so the eager path (and the exception it raises) is the
        original code, untouched.
        """
        raise_node = node.body[0]
        condition = self.condition(node.test)
        message = self._raise_message(raise_node, node.test)
        start = self.analysis.start_of(node)
        indent = self.analysis.source.line(start.line)[: start.col]
        if indent.strip():
            raise Declined("the `if` shares its line with other code")
        check = wrap_long_call(f"{self.torch}._assert_async({self._negate(condition)}, {message})")
        body = "\n".join(indent + "    " + line for line in check.split("\n"))
        content = f"if {self.torch}.compiler.is_compiling():\n{body}\n{indent}el"
        return Rewrite(start, start, content, safe=False)

    def truthiness(self, node: nodes.NodeNG) -> Rewrite:
        """``a and b`` / ``a or b`` / ``not a`` used as a value → ``&``, ``|``, ``~``.

        Only boolean tensors: for them ``a & b`` has the value ``a and b`` had
        (a 0-d bool tensor either way), so the fix is safe; ``not a`` was a
        Python bool and becomes a tensor, so that one is unsafe.
        """
        operands = node.values if isinstance(node, nodes.BoolOp) else [node.operand]
        for operand in operands:
            if self.values.kind(operand) is not Kind.TENSOR or not self._is_boolean(operand):
                raise Declined(f"`{operand.as_string()}` is not known to be a boolean tensor")
        text = self.condition(node)
        return Rewrite(self.analysis.start_of(node), self.analysis.end_of(node), text, isinstance(node, nodes.BoolOp))

    def assert_operands(self, node: nodes.Assert) -> Rewrite:
        """``assert a and b, msg`` → ``assert (a) & (b), msg``: one device-side check instead of a host ``and``.

        Eagerly the assertion passes and fails exactly as before (with the same
        ``AssertionError``). Under compile Dynamo checks the whole test with an
        async assert, so a failure of an operand other than the last one raises
        ``RuntimeError`` where it raised ``AssertionError`` (measured, torch 2.13):
        always unsafe.
        """
        return replace(self.truthiness(node.test), safe=False)

    # -- conditions -----------------------------------------------------------------

    def condition(self, test: nodes.NodeNG) -> str:
        """*test* as a boolean-tensor expression, with ``and``/``or``/``not`` made elementwise."""
        if isinstance(test, nodes.BoolOp):
            for operand in test.values[1:]:  # `and`/`or` may have skipped them; `&`/`|` always evaluates them
                self.check_effects(operand)
            operator = " & " if test.op == "and" else " | "
            return operator.join(self.parenthesised(self.condition(v)) for v in test.values)
        if isinstance(test, nodes.UnaryOp) and test.op == "not":
            return self._negate(self.condition(test.operand))
        if self.values.kind(test) is not Kind.TENSOR:
            raise Declined(f"`{test.as_string()}` is not a tensor, so it cannot be an elementwise condition")
        text = self.text(test)
        return text if self._is_boolean(test) else f"{self.parenthesised(text)} != 0"

    def _is_boolean(self, test: nodes.NodeNG) -> bool:
        if isinstance(test, nodes.Compare):
            return True
        if isinstance(test, nodes.Call):
            func = test.func
            name = func.attrname if isinstance(func, nodes.Attribute) else getattr(func, "name", "")
            return name in BOOLEAN_PRODUCERS
        if isinstance(test, nodes.Name):
            try:
                _, bindings = test.lookup(test.name)
            except Exception:
                return False
            values = [b.parent.value for b in bindings if isinstance(b.parent, nodes.Assign)]
            return len(values) == len(bindings) == 1 and self._is_boolean(values[0])
        return False

    def _negate(self, condition: str) -> str:
        return f"~{self.parenthesised(condition)}"

    @staticmethod
    def parenthesised(text: str) -> str:
        """*text* wrapped in parentheses unless it is a primary (binds tighter than any operator)."""
        stripped = text.strip()
        try:
            tree = ast.parse(stripped, mode="eval").body
        except SyntaxError:
            return f"({stripped})"
        if isinstance(tree, (ast.Name, ast.Attribute, ast.Call, ast.Subscript, ast.Constant)) or (
            stripped.startswith("(") and stripped.endswith(")") and _balanced(stripped[1:-1])
        ):
            return stripped
        return f"({stripped})"

    # -- assignments ----------------------------------------------------------------

    def assignments(self, node: nodes.If, condition: str) -> tuple[list[str], bool]:
        body, body_locals = self._split_branch_locals(node, list(node.body))
        orelse, else_locals = self._split_branch_locals(node, list(node.orelse))
        suffix: list[str] = []
        setup: list[str] = []
        if orelse and not _is_elif(orelse):
            body, true_setup = self._split_setup(body)
            orelse, false_setup = self._split_setup(orelse)
            setup = true_setup + false_setup
            body, orelse, suffix = self._hoist_common_suffix(body, orelse, condition)
            if not body and not orelse and suffix:
                return setup + suffix, False
        true_values = self._branch_values(body)
        false_values = self._else_values(orelse)
        names = list(dict.fromkeys([*true_values, *false_values]))
        if not names:
            raise Declined("the branches assign nothing that could be selected")
        safe = True
        statements: list[str] = []
        if len(names) > 1 and not _is_name(condition):
            statements.append(f"_gm_cond = {condition}")
            condition = "_gm_cond"
        rebound: set[str] = set()
        for name in names:
            on_true = true_values.get(name) or self.previous_value(node, name)
            on_false = false_values.get(name) or self.previous_value(node, name)
            _check_same_shape(name, on_true, on_false)
            stale = (on_true.reads | on_false.reads) & rebound
            if stale:
                raise Declined(f"the value selected for `{name}` reads `{sorted(stale)[0]}`, which the rewrite re-binds first")
            statements.append(f"{name} = {self._where(condition, on_true.text, on_false.text)}")
            rebound.add(name)
            safe = safe and on_true.safe and on_false.safe
        return body_locals + else_locals + setup + statements + suffix, safe and not suffix and not setup

    def _split_branch_locals(self, node: nodes.If, block: list[nodes.NodeNG]) -> tuple[list[nodes.NodeNG], list[str]]:
        """Leading ``name = <value without tensors or effects>`` statements whose name nothing outside the branch reads.

        ``clamp_value = torch.finfo(h.dtype).max - 1000``: computing it whichever side is taken changes
        nothing, so it moves before the select and the branch is left with tensor assignments.
        """
        hoisted: list[str] = []
        while block and self._is_branch_local_static(node, block[0]):
            hoisted.append(self._statement_source(block[0]))
            block = block[1:]
        return block, hoisted

    def _is_branch_local_static(self, node: nodes.If, statement: nodes.NodeNG) -> bool:
        if not (isinstance(statement, nodes.Assign) and len(statement.targets) == 1):
            return False
        target = statement.targets[0]
        if not isinstance(target, nodes.AssignName) or self.values.kind(statement.value) is Kind.TENSOR:
            return False
        if not all(self.values.qualified_name(call.func) in PURE_STATIC_CALLS for call in statement.value.nodes_of_class(nodes.Call)):
            return False
        reads = [use for use in node.scope().nodes_of_class(nodes.Name) if use.name == target.name]
        return all(_assigned_earlier_in_block(use, target.name) for use in reads)

    def _split_setup(self, block: list[nodes.NodeNG]) -> tuple[list[nodes.NodeNG], list[str]]:
        """Leading statements that may run on both sides, as GraphMend allows.

        A memoising init (``if not hasattr(obj, "x"): obj.x = ...``) runs at
        most once whichever side is taken, and ``a = a.to(...)`` is idempotent,
        so both can move before the select. Their source is kept verbatim.
        """
        hoisted: list[str] = []
        while block and (self._is_memoising_init(block[0]) or _is_idempotent_move(block[0])):
            hoisted.append(self._statement_source(block[0]))
            block = block[1:]
        return block, hoisted

    def _is_memoising_init(self, statement: nodes.NodeNG) -> bool:
        if not isinstance(statement, nodes.If) or statement.orelse:
            return False
        test = statement.test
        if not (isinstance(test, nodes.UnaryOp) and test.op == "not" and isinstance(test.operand, nodes.Call)):
            return False
        call = test.operand
        if self.text(call.func) != "hasattr" or len(call.args) != 2 or not isinstance(call.args[1], nodes.Const):
            return False
        owner, attribute = self.text(call.args[0]), call.args[1].value
        for inner in statement.body:
            targets = inner.targets if isinstance(inner, nodes.Assign) else []
            written = [t for target in targets for t in ([target] if not isinstance(target, nodes.Tuple) else target.elts)]
            if not inner or not written:
                return False
            for target in written:
                is_memo = isinstance(target, nodes.AssignAttr) and self.text(target.expr) == owner and target.attrname == attribute
                if not is_memo and not (isinstance(target, nodes.AssignName) and target.name == "_"):
                    return False
        return True

    def _statement_source(self, statement: nodes.NodeNG) -> str:
        """A whole statement's source, re-indented to start at column 0."""
        source = self.analysis.source
        start, end = self.analysis.start_of(statement), self.analysis.end_of(statement)
        lines = [source.line(n) for n in range(start.line, end.line + 1)]
        lines[-1] = lines[-1][: end.col]
        return textwrap.dedent("\n".join(lines)).strip("\n")

    def _branch_values(self, statements: Sequence[nodes.NodeNG]) -> dict[str, _Selected]:
        """name → (value text, safe, names read), for a block of plain assignments."""
        values: dict[str, _Selected] = {}
        for statement in statements:
            if isinstance(statement, nodes.Assign) and len(statement.targets) == 1:
                target, value_node = statement.targets[0], statement.value
                value = self.text(value_node)
            elif isinstance(statement, nodes.AugAssign):
                target, value_node = statement.target, statement.value
                value = f"{target.as_string()} {statement.op[:-1]} {self.parenthesised(self.text(value_node))}"
            elif isinstance(statement, nodes.Pass):
                continue
            else:
                raise Declined(f"line {statement.lineno}: `{_first_line(statement)}` is not a plain assignment")
            name = _selected_name(target)
            if name is None:
                raise Declined(f"line {statement.lineno}: only assignments to local names or `self.<name>` can be selected")
            reads = _reads(value_node)
            if reads & set(values):
                raise Declined(f"line {statement.lineno}: `{name}` reads a name the same branch just assigned")
            self._check_pure(value_node)
            if self.values.kind(value_node) is not Kind.TENSOR and not _is_number(value_node):
                raise Declined(f"line {statement.lineno}: `{value}` is not a tensor, so `torch.where` cannot select it")
            # an attribute is set through `__setattr__` (a buffer, a property): never offered as safe
            safe = _cheap(value_node) and isinstance(target, nodes.AssignName)
            values[name] = _Selected(value, safe, frozenset(reads), shape_operations(value_node, self.values))
        return values

    def _else_values(self, orelse: list[nodes.NodeNG]) -> dict[str, _Selected]:
        if not _is_elif(orelse):
            return self._branch_values(orelse)
        inner: nodes.If = orelse[0]
        static = self._static_test(inner.test)
        condition = self.text(inner.test) if static else self.condition(inner.test)
        true_values = self._branch_values(inner.body)
        false_values = self._else_values(list(inner.orelse))
        merged: dict[str, _Selected] = {}
        for name in dict.fromkeys([*true_values, *false_values]):
            on_true = true_values.get(name) or self.previous_value(inner, name)
            on_false = false_values.get(name) or self.previous_value(inner, name)
            _check_same_shape(name, on_true, on_false)
            reads = on_true.reads | on_false.reads | _names_in(condition)
            if static:  # Python still picks one side, and evaluates only that one
                text = f"({on_true.text} if {condition} else {on_false.text})"
            else:
                text = self._where(condition, on_true.text, on_false.text)
            merged[name] = _Selected(text, on_true.safe and on_false.safe, reads, on_true.shape)
        return merged

    def _static_test(self, test: nodes.NodeNG) -> bool:
        """An ``elif`` test Dynamo specialises on and that calls nothing (``self.momentum == -1``).

        It becomes a Python conditional expression inside the select, so it is
        now evaluated even where the tensor test before it was true: without
        calls, that evaluation has no effect.
        """
        return self.values.kind(test) is Kind.STATIC and not any(True for _ in test.nodes_of_class(nodes.Call))

    def previous_value(self, node: nodes.NodeNG, name: str) -> _Selected:
        """The value *name* keeps where it is not assigned (a side of an ``if``, a dropped layer): a tensor already."""
        if "." in name:
            raise Declined(f"`{name}` is assigned on one side only; an attribute is selected only where every branch sets it")
        function = node.scope()
        earlier = [
            binding
            for binding in function.nodes_of_class((nodes.AssignName,))
            if binding.name == name and binding.lineno < node.lineno
        ]
        parameters = [a for a in getattr(function.args, "arguments", []) if a.name == name]
        if not earlier and not parameters:
            raise Declined(f"`{name}` is assigned on one side only and has no value before the `if`")
        probe = next(iter([*earlier, *parameters]))
        if self.values.kind(_name_use(probe, name)) is not Kind.TENSOR:
            raise Declined(f"`{name}` is assigned on one side only and is not known to be a tensor before the `if`")
        return _Selected(name, True, frozenset({name}), frozenset({name}))

    def _hoist_common_suffix(
        self, body: list[nodes.NodeNG], orelse: list[nodes.NodeNG], condition: str
    ) -> tuple[list[nodes.NodeNG], list[nodes.NodeNG], list[str]]:
        """Trailing statements both branches share run once, after the selects."""
        suffix: list[str] = []
        while body and orelse:
            last_true, last_false = body[-1], orelse[-1]
            if self.text(last_true) == self.text(last_false):
                suffix.insert(0, self.text(last_true))
            else:
                merged = self._common_call(last_true, last_false, condition)
                if merged is None:
                    break
                suffix.insert(0, merged)
            body, orelse = body[:-1], orelse[:-1]
        return body, orelse, suffix

    def _common_call(self, left: nodes.NodeNG, right: nodes.NodeNG, condition: str) -> str | None:
        """``f(a, t1)`` and ``f(a, t2)`` → ``f(a, torch.where(c, t1, t2))`` for tensor arguments."""
        if not (isinstance(left, nodes.Expr) and isinstance(right, nodes.Expr)):
            return None
        call_a, call_b = left.value, right.value
        if not (isinstance(call_a, nodes.Call) and isinstance(call_b, nodes.Call)):
            return None
        if self.text(call_a.func) != self.text(call_b.func) or len(call_a.args) != len(call_b.args):
            return None
        if [k.arg for k in call_a.keywords or []] != [k.arg for k in call_b.keywords or []]:
            return None
        arguments: list[str] = []
        pairs = list(zip(call_a.args, call_b.args)) + list(zip(call_a.keywords or [], call_b.keywords or []))
        for first, second in pairs:
            keyword = f"{first.arg}=" if isinstance(first, nodes.Keyword) else ""
            value_a = first.value if isinstance(first, nodes.Keyword) else first
            value_b = second.value if isinstance(second, nodes.Keyword) else second
            text_a, text_b = self.text(value_a), self.text(value_b)
            if text_a == text_b:
                arguments.append(keyword + text_a)
                continue
            self._check_selectable(value_a, value_b, known_tensor=self._takes_tensor(call_a, first))
            arguments.append(keyword + self._where(condition, text_a, text_b))
        return f"{self.text(call_a.func)}({', '.join(arguments)})"

    # -- returns --------------------------------------------------------------------

    def _return_pair(self, node: nodes.If) -> tuple[nodes.Return, nodes.Return, nodes.NodeNG] | None:
        """The two returns of ``if c: return a else: return b`` (or a following ``return b``)."""
        if len(node.body) != 1 or not isinstance(node.body[0], nodes.Return):
            return None
        if len(node.orelse) == 1 and isinstance(node.orelse[0], nodes.Return):
            return node.body[0], node.orelse[0], node
        following = node.next_sibling()
        if not node.orelse and isinstance(following, nodes.Return):
            return node.body[0], following, following
        return None

    def _predicated_return(self, node: nodes.If, on_true: nodes.Return, on_false: nodes.Return, last: nodes.NodeNG) -> Rewrite:
        condition = self.condition(node.test)
        if on_true.value is None or on_false.value is None:
            raise Declined("a branch returns None, which `torch.where` cannot select")
        left, right = on_true.value, on_false.value
        if isinstance(left, nodes.Tuple) and isinstance(right, nodes.Tuple):
            if len(left.elts) != len(right.elts):
                raise Declined("the branches return tuples of different lengths")
            pairs = list(zip(left.elts, right.elts))
        else:
            pairs = [(left, right)]
        for first, second in pairs:
            self._check_selectable(first, second)
        condition_name = condition
        prefix: list[str] = []
        if len(pairs) > 1 and not _is_name(condition):
            prefix.append(f"_gm_cond = {condition}")
            condition_name = "_gm_cond"
        selected = [self._where(condition_name, self.text(a), self.text(b)) for a, b in pairs]
        safe = all(self._cheap_same_dtype(a, b) for a, b in pairs)
        return self.statement_rewrite(node, last, [*prefix, "return " + ", ".join(selected)], safe)

    # -- checks ---------------------------------------------------------------------

    def _check_selectable(self, first: nodes.NodeNG, second: nodes.NodeNG, known_tensor: bool = False) -> None:
        if not same_shape(shape_operations(first), shape_operations(second)):
            raise Declined(
                f"`{first.as_string()}` and `{second.as_string()}` may have different shapes; "
                "`torch.where` would broadcast or fail where the branch did not"
            )
        for value in (first, second):
            if isinstance(value, nodes.Const) and not _is_number(value):
                raise Declined(f"`{value.as_string()}` is not a tensor or a number, so `torch.where` cannot select it")
            self._check_pure(value)
        if not known_tensor and Kind.TENSOR not in (self.values.kind(first), self.values.kind(second)):
            raise Declined("neither side is a tensor, so the select would change the result's type")

    @staticmethod
    def _takes_tensor(call: nodes.Call, argument: nodes.NodeNG) -> bool:
        """``register_buffer(name, tensor)``: the API only accepts a tensor in that slot."""
        func = call.func
        if not (isinstance(func, nodes.Attribute) and func.attrname in {"register_buffer", "register_parameter"}):
            return False
        if isinstance(argument, nodes.Keyword):
            return argument.arg in {"tensor", "param"}
        return len(call.args) > 1 and call.args[1] is argument

    def _check_pure(self, value: nodes.NodeNG) -> None:
        """Reject values whose evaluation has effects or could fail on the unselected side."""
        self.check_effects(value)
        for subscript in value.nodes_of_class(nodes.Subscript):
            if self.values.kind(subscript.slice) is Kind.TENSOR:
                raise Declined(f"`{subscript.as_string()}` indexes with a tensor, which can fail on the unselected side")

    def check_effects(self, value: nodes.NodeNG) -> None:
        """Reject values that call something with side effects, or something the linter cannot classify."""
        for call in value.nodes_of_class(nodes.Call):
            func = call.func
            name = func.attrname if isinstance(func, nodes.Attribute) else getattr(func, "name", "")
            if name in IMPURE_CALLS or name.endswith("_") and not name.startswith("_"):
                raise Declined(f"`{call.as_string()}` has side effects; a predicated branch must be free of them")
            kind = self.values.kind(call)
            if kind is Kind.UNKNOWN:
                raise Declined(f"`{call.as_string()}` is a call the linter cannot prove free of side effects")

    def _cheap_same_dtype(self, first: nodes.NodeNG, second: nodes.NodeNG) -> bool:
        """Both sides are cheap elementwise arithmetic over the same single tensor name."""
        return _cheap(first) and _cheap(second) and _tensor_names(first) == _tensor_names(second) and len(
            _tensor_names(first)
        ) == 1

    # -- text -----------------------------------------------------------------------

    def text(self, node: nodes.NodeNG) -> str:
        """The exact source text of *node* (formatting kept), on one line when it spans lines."""
        source = self.analysis.source
        start, end = self.analysis.start_of(node), self.analysis.end_of(node)
        if start.line == end.line:
            return source.line(start.line)[start.col : end.col]
        lines = [source.line(n) for n in range(start.line, end.line + 1)]
        lines[0], lines[-1] = lines[0][start.col :], lines[-1][: end.col]
        return " ".join(line.strip() for line in _strip_comments(lines))

    def _where(self, condition: str, on_true: str, on_false: str) -> str:
        return f"{self.torch}.where({condition}, {on_true}, {on_false})"

    def _raise_message(self, raise_node: nodes.Raise, test: nodes.NodeNG) -> str:
        exc = raise_node.exc
        if isinstance(exc, nodes.Call) and exc.args and isinstance(exc.args[0], nodes.Const):
            if isinstance(exc.args[0].value, str):
                return self.text(exc.args[0])
        name = exc.func.as_string() if isinstance(exc, nodes.Call) else (exc.as_string() if exc else "error")
        return repr(f"{name}: {test.as_string()}")

    def statement_rewrite(self, first: nodes.NodeNG, last: nodes.NodeNG, statements: list[str], safe: bool) -> Rewrite:
        """Replace the statements from *first* to *last* with *statements*, comments kept above."""
        source = self.analysis.source
        start, end = self.analysis.start_of(first), self.analysis.end_of(last)
        indent = source.line(start.line)[: start.col]
        if indent.strip():
            raise Declined("the `if` shares its line with other code")
        comments = _comments([source.line(n) for n in range(start.line, end.line + 1)])
        lines = [line for statement in [*comments, *statements] for line in wrap_long_call(statement).split("\n")]
        # the first line starts after the original indent; later blank lines stay empty (no trailing spaces)
        content = "\n".join(
            line if index == 0 else indent + line if line.strip() else "" for index, line in enumerate(lines)
        )
        return Rewrite(Position(start.line, start.col), end, content, safe)


def as_fix(rewrite: Rewrite, message: str, import_edits: tuple[Edit, ...] = ()) -> Fix:
    applicability = Applicability.SAFE if rewrite.safe else Applicability.UNSAFE
    edit = Edit(rewrite.start, rewrite.end, rewrite.content)
    return Fix(edits=(*import_edits, edit), applicability=applicability, message=message)


def predicated_fix(
    analysis: FileAnalysis, build: Callable[[Predicator, Any], Rewrite], node: nodes.NodeNG, message: str
) -> Fix:
    """Run one rewrite (``build(predicator, node)``); a decline becomes advice saying why."""
    try:
        predicator = Predicator(analysis, node)
        rewrite = build(predicator, node)
    except Declined as reason:
        return declined_fix(str(reason))
    return as_fix(rewrite, rewrite.message or message, predicator.import_edits)


def declined_fix(reason: str) -> Fix:
    """A display-only fix that tells the user why no rewrite is offered."""
    return Fix.advice(f"No automatic fix: {reason}")


def is_elif(analysis: FileAnalysis, node: nodes.If) -> bool:
    """An ``elif`` is rewritten as part of the ``if`` it belongs to, never on its own."""
    start = analysis.start_of(node)
    return analysis.source.line(start.line)[start.col :].startswith("elif")


MAX_LINE = 100


def wrap_long_call(statement: str) -> str:
    """Put the arguments of an over-long top-level ``where``/call on their own lines."""
    if len(statement) <= MAX_LINE or "\n" in statement or not statement.endswith(")"):
        return statement
    opening = _top_level_call_open(statement)
    if opening is None:
        return statement
    arguments = _split_arguments(statement[opening + 1 : -1])
    if len(arguments) < 2:
        return statement
    inner = "".join(f"\n    {argument.strip()}," for argument in arguments)
    return f"{statement[: opening + 1]}{inner}\n)"


def _top_level_call_open(statement: str) -> int | None:
    """Index of the ``(`` that the final ``)`` closes."""
    depth = 0
    for index in range(len(statement) - 1, -1, -1):
        char = statement[index]
        if char == ")":
            depth += 1
        elif char == "(":
            depth -= 1
            if depth == 0:
                return index
    return None


def _split_arguments(text: str) -> list[str]:
    """Split on top-level commas, respecting brackets and strings (via the tokenizer)."""
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, SyntaxError):
        return [text]
    depth, cuts = 0, []
    for token in tokens:
        if token.type == tokenize.OP and token.string in "([{":
            depth += 1
        elif token.type == tokenize.OP and token.string in ")]}":
            depth -= 1
        elif token.type == tokenize.OP and token.string == "," and depth == 0:
            cuts.append(token.start[1])
    pieces, previous = [], 0
    for cut in cuts:
        pieces.append(text[previous:cut])
        previous = cut + 1
    pieces.append(text[previous:])
    return [piece for piece in pieces if piece.strip()]


@dataclass(frozen=True)
class _Selected:
    """One side's value for a name: its text, whether it is cheap, what it reads, its shape operations."""

    text: str
    safe: bool
    reads: frozenset[str]
    shape: frozenset[str]


def shape_operations(node: nodes.NodeNG, values: ValueOracle | None = None) -> frozenset[str]:
    """What decides the shape of *node*'s value: the tensors it broadcasts, and opaque reshapes.

    Elementwise arithmetic takes the broadcast of its operands; a method such as
    ``h.masked_fill(m, 0)`` keeps its receiver's shape; a full reduction
    (``y.max()``) is a scalar that broadcasts away; slicing, reshaping and
    reductions over a dimension are kept as opaque text (prefixed ``~``).
    With *values*, ``torch.min(a, b)`` / ``a.max(b)`` whose second operand is
    known to be a tensor is the elementwise extremum, not a reduction.
    :func:`same_shape` compares two results.
    """
    if isinstance(node, nodes.Const):
        return frozenset()
    if isinstance(node, nodes.Name):
        return frozenset({node.name})
    if isinstance(node, nodes.Attribute):
        if node.attrname in {"T", "mT", "H", "mH"}:
            return frozenset({"~" + node.as_string()})
        return frozenset({node.as_string()})
    if isinstance(node, nodes.UnaryOp):
        return shape_operations(node.operand, values)
    if isinstance(node, nodes.BinOp):
        if node.op == "@":
            return frozenset({"~" + node.as_string()})
        return shape_operations(node.left, values) | shape_operations(node.right, values)
    if isinstance(node, nodes.Call):
        return _call_shape(node, values)
    return frozenset({"~" + node.as_string()})


def _call_shape(call: nodes.Call, values: ValueOracle | None) -> frozenset[str]:
    func = call.func
    name = func.attrname if isinstance(func, nodes.Attribute) else getattr(func, "name", "")
    is_torch_function = isinstance(func, nodes.Attribute) and isinstance(func.expr, nodes.Name) and func.expr.name in {
        "torch", "F", "self"}  # fmt: skip
    operands = list(call.args) if is_torch_function else [func.expr, *call.args] if isinstance(func, nodes.Attribute) else []
    if name in {"min", "max"} and values is not None and len(operands) == 2 and not call.keywords:
        if values.kind(operands[1]) is Kind.TENSOR:  # the elementwise minimum/maximum of two tensors
            return shape_operations(operands[0], values) | shape_operations(operands[1], values)
    if name in SHAPE_OPERATIONS:
        if name in FULL_REDUCTIONS and not call.args and not call.keywords:
            return frozenset()
        return frozenset({"~" + call.as_string()})
    if isinstance(func, nodes.Attribute) and not is_torch_function:
        return shape_operations(func.expr, values)  # x.relu(), h.masked_fill(m, 0): the receiver's shape
    shapes = [shape_operations(argument, values) for argument in call.args]
    return frozenset().union(*shapes) if shapes else frozenset({"~" + call.as_string()})


def same_shape(first: frozenset[str], second: frozenset[str]) -> bool:
    """Equal opaque reshapes, and both sides tensors (or both scalars).

    Which inputs are broadcast together is not compared: inputs of one
    function are assumed to share a shape. A slice, reshape or reduction on
    one side only, or a scalar against a tensor, is a provable difference.
    """
    opaque_first = {part for part in first if part.startswith("~")}
    opaque_second = {part for part in second if part.startswith("~")}
    return opaque_first == opaque_second and bool(first) == bool(second)


def _check_same_shape(name: str, first: _Selected, second: _Selected) -> None:
    if not same_shape(first.shape, second.shape):
        raise Declined(f"the two values of `{name}` may have different shapes; `torch.where` would broadcast or fail")


def _is_idempotent_move(statement: nodes.NodeNG) -> bool:
    """``a = a.to(...)``: moving a tensor twice is the same as moving it once."""
    if not (isinstance(statement, nodes.Assign) and len(statement.targets) == 1):
        return False
    value = statement.value
    return (
        isinstance(value, nodes.Call)
        and isinstance(value.func, nodes.Attribute)
        and value.func.attrname == "to"
        and value.func.expr.as_string() == statement.targets[0].as_string()
    )


def _is_elif(orelse: list[nodes.NodeNG]) -> bool:
    return len(orelse) == 1 and isinstance(orelse[0], nodes.If)


def _is_name(text: str) -> bool:
    return text.isidentifier()


def _is_number(node: nodes.NodeNG) -> bool:
    if isinstance(node, nodes.UnaryOp) and node.op == "-":
        node = node.operand
    return isinstance(node, nodes.Const) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool)


def _cheap(node: nodes.NodeNG) -> bool:
    """Names, attributes, numbers and +, -, * over them: computing both sides costs nothing."""
    if isinstance(node, (nodes.Name, nodes.Attribute)):
        return True
    if isinstance(node, nodes.Const):
        return isinstance(node.value, int) and not isinstance(node.value, bool)
    if isinstance(node, nodes.UnaryOp) and node.op == "-":
        return _cheap(node.operand)
    if isinstance(node, nodes.BinOp) and node.op in {"+", "-", "*"}:
        return _cheap(node.left) and _cheap(node.right)
    return False


def _tensor_names(node: nodes.NodeNG) -> set[str]:
    return {n.name for n in node.nodes_of_class(nodes.Name)} | {a.as_string() for a in node.nodes_of_class(nodes.Attribute)}


def _name_use(binding: nodes.NodeNG, name: str) -> nodes.NodeNG:
    """A Name node reading *name* just after *binding*, for the value oracle."""
    scope = binding.scope()
    for use in scope.nodes_of_class(nodes.Name):
        if use.name == name:
            return use
    return binding


def _selected_name(target: nodes.NodeNG) -> str | None:
    """The name a select assigns: a local, or ``self.<attribute>`` (a module's buffer or state)."""
    if isinstance(target, nodes.AssignName):
        return target.name
    if isinstance(target, nodes.AssignAttr) and isinstance(target.expr, nodes.Name) and target.expr.name == "self":
        return f"self.{target.attrname}"
    return None


def _reads(value: nodes.NodeNG) -> set[str]:
    """The local names and ``self.<attribute>`` values *value* reads, to compare with what a rewrite re-binds."""
    attributes = {dotted(a) for a in value.nodes_of_class(nodes.Attribute) if isinstance(a.expr, nodes.Name)}
    return {n.name for n in value.nodes_of_class(nodes.Name)} | {a for a in attributes if a and a.startswith("self.")}


def _names_in(text: str) -> frozenset[str]:
    return frozenset({token for token in text.replace("(", " ").replace(")", " ").replace(".", " ").split() if token.isidentifier()})


def _first_line(node: nodes.NodeNG) -> str:
    return node.as_string().splitlines()[0]


def _balanced(text: str) -> bool:
    depth = 0
    for char in text:
        depth += {"(": 1, ")": -1}.get(char, 0)
        if depth < 0:
            return False
    return depth == 0


def _comments(lines: list[str]) -> list[str]:
    """Every comment in *lines*, so a rewrite keeps them (above the new code)."""
    found: list[str] = []
    try:
        block = textwrap.dedent("\n".join(lines)) + "\n"
        for token in tokenize.generate_tokens(io.StringIO(block).readline):
            if token.type == tokenize.COMMENT:
                found.append(token.string)
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return [line.strip() for line in lines if line.strip().startswith("#")]
    return found


def _strip_comments(lines: list[str]) -> list[str]:
    return [line.split("#", 1)[0] if "#" in line and "'" not in line and '"' not in line else line for line in lines]


def _assigned_earlier_in_block(use: nodes.Name, name: str) -> bool:
    """Some block holding *use* assigns *name* (``name = ...``) in a statement before the one holding *use*.

    Then hoisting another block's assignment of *name* cannot change the value *use* reads (LongT5
    recomputes ``clamp_value`` in each of its three clamps).
    """
    statement = use.statement()
    while statement is not None and not isinstance(statement, (nodes.FunctionDef, nodes.Module)):
        sibling = statement.previous_sibling()
        while sibling is not None:
            if isinstance(sibling, nodes.Assign) and any(
                isinstance(t, nodes.AssignName) and t.name == name for t in sibling.targets
            ):
                return True
            sibling = sibling.previous_sibling()
        statement = statement.parent.statement() if statement.parent is not None else None
    return False
