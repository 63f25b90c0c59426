"""Does this code contain a graph break? The detectors of several rules, asked together.

GM505 needs to know whether a comprehension's body, a loop's body or the code
a ``try`` block calls will break the graph: Dynamo then compiles a
comprehension's frame on its own. It asks the same questions the rules that
report those breaks ask (a conversion to a Python scalar, a tensor given as a
size, a data-dependent output size, ``torch.equal``, a 0-d index, a branch on
a tensor, a print or log call, an RNN module), without reporting anything.
Calls into functions and methods of the same file are followed a few levels;
what cannot be resolved in the file is *unknown*.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterator

from astroid import nodes
from astroid.const import Context

from graphmend_lint.analysis.conditions import tensor_condition_parts
from graphmend_lint.analysis.fresh_objects import fresh_instance_class, method_of
from graphmend_lint.analysis.host_values import math_conversion, mixed_clamp_bound, scalar_conversion
from graphmend_lint.analysis.lookup import loops_around, reaching_bindings, statement_block
from graphmend_lint.analysis.module_attributes import constructor_of
from graphmend_lint.analysis.random_draws import draw_use
from graphmend_lint.analysis.recurrent_modules import RECURRENT_MODULES
from graphmend_lint.analysis.side_effects import LoggerConfig, SideEffectFinder
from graphmend_lint.analysis.tensor_sizes import TensorSize, frame_input, tensor_size
from graphmend_lint.analysis.values import ValueOracle, assigned_self_values, enclosing_class
from graphmend_lint.analysis.zero_dim import zero_dim_element
from graphmend_lint.context import RuleContext
from graphmend_lint.rules.gm303_tensor_comparison_to_bool import tensor_predicate
from graphmend_lint.rules.gm401_data_dependent_shape import boolean_index, dynamic_operator
from graphmend_lint.rules.gm402_tensor_slice_bound import data_dependent_bound

_MAX_DEPTH = 3
_MAX_BINDINGS = 16
_SCOPES = (nodes.FunctionDef, nodes.ClassDef, nodes.Lambda)


class Verdict(enum.Enum):
    BREAKS = "breaks"
    CLEAN = "clean"  # nothing in it, or in what it calls in this file, breaks
    UNKNOWN = "unknown"  # it calls code this file does not hold


def _pruned(function: nodes.FunctionDef) -> bool:
    """The body is the ``...`` stand-in the pruned tree puts in functions outside compile scope."""
    body = function.body
    return len(body) == 1 and isinstance(body[0], nodes.Expr) and isinstance(body[0].value, nodes.Const) and (
        body[0].value.value is Ellipsis
    )


def _loop_of(target: nodes.AssignName) -> nodes.NodeNG:
    """The statement binding a loop target (``for layer in ...`` / ``for i, layer in ...``)."""
    parent = target.parent
    return parent.parent if isinstance(parent, nodes.Tuple) else parent


def _evaluated_before(call: nodes.Call, child: nodes.NodeNG) -> list[nodes.NodeNG]:
    """The parts of *call* Python evaluates before its part *child*: the callee, then the arguments in order."""
    parts = [call.func, *call.args, *(keyword.value for keyword in call.keywords or [])]
    return parts[: parts.index(child)] if child in parts else []


def _walk(node: nodes.NodeNG) -> Iterator[nodes.NodeNG]:
    """*node* and its descendants, not entering nested functions or classes."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(child for child in current.get_children() if not isinstance(child, _SCOPES))


def _tensor_tolist(values: ValueOracle, call: nodes.Call) -> bool:
    return isinstance(call.func, nodes.Attribute) and call.func.attrname == "tolist" and values.is_tensor(call.func.expr)


class BreakFinder:
    """Answers "does this code break the graph?" for one file."""

    def __init__(self, values: ValueOracle, finder: SideEffectFinder) -> None:
        self.values = values
        self.side_effects = finder
        # answers of :meth:`resumed_input`; ``False`` while one is being worked out, so that the breaks it looks
        # for (which may hold sizes of their own, in functions that call each other) cannot ask it again
        self._resumed: dict[nodes.NodeNG, bool] = {}

    def breaking_node(self, node: nodes.NodeNG) -> nodes.NodeNG | None:
        """The first construct under *node* (this function only) that breaks the graph, else ``None``."""
        for current in _walk(node):
            if self._breaks(current):
                return current
        return None

    def breaks_in_loop_around(self, node: nodes.NodeNG, ignore: Callable[[nodes.NodeNG], bool]) -> bool:
        """A ``for``/``while`` loop of *node*'s function around it holds a break other than those *ignore*
        accepts (and *node*'s own parts). After a break in a loop Dynamo runs the function eagerly."""
        inside = set(_walk(node))
        return any(
            current not in inside and not ignore(current) and self._breaks(current)
            for loop in loops_around(node)
            for current in _walk(loop)
        )

    def breaking_call(self, node: nodes.NodeNG) -> nodes.Call | None:
        """The first call under *node* (this function only) that runs code of this file which breaks the graph
        (a few levels down, see :meth:`verdict`), else ``None``."""
        for call in (n for n in _walk(node) if isinstance(n, nodes.Call)):
            if any(callee is not None and self.verdict(callee) is Verdict.BREAKS for callee in self._callees(call)):
                return call
        return None

    def data_dependent_node(self, function: nodes.FunctionDef) -> nodes.NodeNG | None:
        """The first construct of *function*'s body (not what it calls) that needs a tensor's data, else ``None``.

        These are the breaks that fail on fake tensors, which carry shapes and
        no data: a branch on a tensor, a conversion to a Python number or list,
        a tensor given as a size, a data-dependent output size, a 0-d index,
        a tensor slice bound. A print or a log call only needs the values it
        formats and runs on fake tensors.
        """
        for current in _walk(function):
            if current is not function and self._needs_data(current):
                if isinstance(current, (nodes.If, nodes.While, nodes.IfExp)):
                    return tensor_condition_parts(self.values, current.test)[0]  # the operand, not the statement
                return current
        return None

    def _needs_data(self, node: nodes.NodeNG) -> bool:
        """*node* breaks because it needs a tensor's value: every break of :meth:`_breaks` but I/O and RNN modules."""
        if isinstance(node, nodes.Call):
            return self._data_call(node)
        return self._breaks(node) if isinstance(node, (nodes.Subscript, nodes.Slice, nodes.If, nodes.While, nodes.IfExp)) else False

    def _data_call(self, node: nodes.Call) -> bool:
        values = self.values
        return (
            scalar_conversion(values, node) is not None
            or self._math_conversion(node)
            or self.tensor_size(node) is not None
            or dynamic_operator(values, node) is not None
            or tensor_predicate(values, node) is not None
            or _tensor_tolist(values, node)
            or mixed_clamp_bound(values, node) is not None
        )

    def _math_conversion(self, node: nodes.Call) -> bool:
        """``math.sqrt(t)`` and friends on a tensor the frame computes (an integer one it receives does not break)."""
        found = math_conversion(self.values, node)
        return found is not None and not frame_input(self.values, found.tensor) and not self.resumed_input(found.tensor)

    def tensor_size(self, node: nodes.NodeNG) -> TensorSize | None:
        """:func:`~graphmend_lint.analysis.tensor_sizes.tensor_size`, unless the tensor is a resumed frame's input."""
        found = tensor_size(self.values, node)
        if found is None or self.resumed_input(found.tensor) or self._resumed_within_statement(found.call, found.tensor):
            return None
        return found

    def _resumed_within_statement(self, call: nodes.Call, node: nodes.NodeNG) -> bool:
        """*node* names a value bound before its statement, read after an earlier part of the statement broke.

        Dynamo resumes right after the breaking call, in a new frame that receives the live names:
        ``torch.meshgrid(torch.arange(n), torch.arange(m))`` with both 0-d tensors logs the first
        ``arange`` only (measured, torch 2.13; SpeechT5's guided attention mask). Arithmetic on the
        name (``torch.arange(m + 1)``) still breaks, as after any break.
        """
        if not isinstance(node, nodes.Name):
            return False
        statement = node.statement()
        try:
            bindings = reaching_bindings(node)
        except Exception:  # astroid lookups can fail on odd code; then nothing is proven
            return False
        if not bindings or any(statement.parent_of(binding) for binding in bindings):
            return False
        child, parent = call, call.parent
        while parent is not None and child is not statement:
            if isinstance(parent, nodes.Call):
                earlier = _evaluated_before(parent, child)
                if any(self.breaking_node(part) is not None for part in earlier):
                    return True
            child, parent = parent, parent.parent
        return False

    def resumed_input(self, node: nodes.NodeNG) -> bool:
        """*node* names a tensor computed before a graph break that always comes before this use.

        After a break Dynamo resumes in a new frame that receives the live
        values as arguments, and a 0-d tensor argument given as a size traces
        (measured, torch 2.13: as a frame's argument in every size operator of
        :mod:`~graphmend_lint.analysis.tensor_sizes`; after a ``nonzero``, a
        ``print``, a branch on a tensor, or returned by a call whose callee
        breaks, in ``torch.arange(n)`` and ``x.new_zeros(b, n)``: Longformer's
        ``max_num_global_attn_indices``). Arithmetic on it (``n + 1``),
        ``int(n)`` and slicing (``x[:n]``) still break, and a break on a branch
        not taken (``if flag: print(...)``) resumes nothing: only a break on
        every path between the binding and the use counts.
        """
        if not isinstance(node, nodes.Name):
            return False
        if node not in self._resumed:
            self._resumed[node] = False
            self._resumed[node] = self._after_breaks(node)
        return self._resumed[node]

    def _after_breaks(self, node: nodes.Name) -> bool:
        try:
            bindings = reaching_bindings(node)
        except Exception:  # astroid lookups can fail on odd code; then nothing is proven
            return False
        use = node.statement()
        return bool(bindings) and all(
            isinstance(binding, nodes.AssignName)
            and binding.frame() is node.frame()
            and binding.lineno < node.lineno
            and self._break_between(binding.statement(), use)
            for binding in bindings[:_MAX_BINDINGS]
        )

    def _break_between(self, binding: nodes.NodeNG, use: nodes.NodeNG) -> bool:
        """A statement that breaks whenever it runs lies on every path from *binding*'s statement to *use*'s."""
        if self._returned_by_breaking_call(binding):
            return True
        child = use
        while not isinstance(child, _SCOPES):
            if child is binding or child.parent_of(binding):
                return False  # bound inside the statement that holds the use (a loop's target): no break between
            block = statement_block(child)
            if block is None:
                return False
            earlier = block[: block.index(child)]
            holder = next((i for i, s in enumerate(earlier) if s is binding or s.parent_of(binding)), None)
            if holder is not None:
                return any(self._always_breaks(statement) for statement in earlier[holder + 1 :])
            if any(self._always_breaks(statement) for statement in earlier):
                return True
            child = child.parent
        return False

    def _returned_by_breaking_call(self, statement: nodes.NodeNG) -> bool:
        """``n = helper(x)`` / ``n, m = helper(x)`` whose callee breaks: the call runs eagerly and returns Python-side
        values, while nothing of the statement itself breaks (a break in the statement would leave the rest of its
        expression to the resumed graph)."""
        value = statement.value if isinstance(statement, nodes.Assign) else None
        return (
            isinstance(value, nodes.Call)
            and self.breaking_node(statement) is None
            and self.verdict(value) is Verdict.BREAKS
        )

    def _always_breaks(self, statement: nodes.NodeNG) -> bool:
        """*statement* breaks whenever it runs: a simple statement that breaks (or calls code that does), or an
        ``if``/``while`` whose test does. A break only inside a compound statement's body may not run."""
        if isinstance(statement, (nodes.If, nodes.While)):
            return bool(tensor_condition_parts(self.values, statement.test)) or draw_use(self.values, statement) is not None
        if isinstance(statement, (nodes.For, nodes.With, nodes.Try, *_SCOPES)):
            return False
        return self.verdict(statement) is Verdict.BREAKS

    def _breaks(self, node: nodes.NodeNG) -> bool:
        values = self.values
        if isinstance(node, nodes.Call):
            return (
                self._data_call(node)
                or self.side_effects.classify(node) is not None
                or constructor_of(values, node.func) in RECURRENT_MODULES
                or draw_use(values, node) is not None
            )
        if isinstance(node, nodes.Subscript):
            read = node.ctx is Context.Load and boolean_index(values, node) is not None
            return read or zero_dim_element(values, node.slice) is not None or draw_use(values, node) is not None
        if isinstance(node, nodes.Slice):
            return any(data_dependent_bound(values, bound) is not None for bound in (node.lower, node.upper, node.step))
        if isinstance(node, (nodes.If, nodes.While, nodes.IfExp)):
            return bool(tensor_condition_parts(values, node.test)) or draw_use(values, node) is not None
        return False

    def verdict(self, node: nodes.NodeNG, depth: int = 0, seen: set[nodes.NodeNG] | None = None) -> Verdict:
        """Whether *node*, or a function of this file it calls (a few levels down), breaks the graph."""
        if self.breaking_node(node) is not None:
            return Verdict.BREAKS
        if isinstance(node, nodes.FunctionDef) and _pruned(node):
            return Verdict.UNKNOWN  # a body linting never looked at (out of compile scope)
        seen = seen if seen is not None else set()
        result = Verdict.CLEAN
        for call in (n for n in _walk(node) if isinstance(n, nodes.Call)):
            for callee in self._callees(call):
                if callee is None:
                    result = Verdict.UNKNOWN
                    continue
                if callee in seen or depth >= _MAX_DEPTH:
                    continue
                seen.add(callee)
                inner = self.verdict(callee, depth + 1, seen)
                if inner is Verdict.BREAKS:
                    return Verdict.BREAKS
                if inner is Verdict.UNKNOWN:
                    result = Verdict.UNKNOWN
        return result

    def _callees(self, call: nodes.Call) -> list[nodes.FunctionDef | None]:
        """Functions of this file *call* runs; ``[None]`` when it runs code this file does not show.

        Calls of torch, of tensors and of builtins are judged by the detectors
        and need no callee: ``[]``.
        """
        func = call.func
        if (self.values.qualified_name(func) or "").startswith("torch."):
            return []
        if isinstance(func, nodes.Attribute):
            return self._method_callees(func)
        if isinstance(func, nodes.Name):
            return self._name_callees(func)
        if isinstance(func, nodes.Subscript):
            return self._mapped_callees(func.value)
        return []

    def _mapped_callees(self, table: nodes.NodeNG) -> list[nodes.FunctionDef | None]:
        """What ``table[key](...)`` runs when *table* is a dict this file spells out: each of its values.

        D-FINE's criterion dispatches ``loss_map[loss](outputs, ...)`` over ``{"local": self.loss_local, ...}``;
        a table read from elsewhere is left to the detectors (``[]``), as before.
        """
        callees: list[nodes.FunctionDef | None] = []
        for source in self.values.value_sources(table) or ():
            if not isinstance(source, nodes.Dict):
                return []
            for _, value in source.items:
                if isinstance(value, nodes.Attribute):
                    callees.extend(self._method_callees(value))
                elif isinstance(value, nodes.Name):
                    callees.extend(self._name_callees(value))
                else:
                    callees.append(None)
        return callees

    def _method_callees(self, func: nodes.Attribute) -> list[nodes.FunctionDef | None]:
        receiver = func.expr
        if self.values.is_tensor(receiver):
            return []
        if isinstance(receiver, nodes.Name) and receiver.name == "self":
            klass = enclosing_class(func)
            method = klass.locals.get(func.attrname) if klass is not None else None
            if method and isinstance(method[0], nodes.FunctionDef):
                return [method[0]]
            kept = [_fresh_method(value) for value in assigned_self_values(klass, func.attrname)] if klass else []
            if kept and all(found is not None for found in kept):
                return kept  # ``self.on_step = Tracker(name).report`` ... ``self.on_step(h)``
        return self._module_forward(receiver if isinstance(receiver, nodes.Attribute) else func)

    def _module_forward(self, module: nodes.NodeNG) -> list[nodes.FunctionDef | None]:
        """``forward`` of the class the submodule *module* (``self.layer``) is built from.

        A ``torch.nn`` layer holds no user code (``[]``; an RNN is a
        detector's business); a class of this file gives its ``forward``;
        anything else is unknown.
        """
        return self._forward_of(constructor_of(self.values, module) or "")

    def _forward_of(self, constructor: str) -> list[nodes.FunctionDef | None]:
        if constructor.startswith("torch.nn."):
            return []
        klass = next((c for c in self.values.module.nodes_of_class(nodes.ClassDef) if c.name == constructor), None)
        forward = klass.locals.get("forward") if klass is not None else None
        return [forward[0]] if forward and isinstance(forward[0], nodes.FunctionDef) else [None]

    def _container_forwards(self, loop: nodes.For) -> list[nodes.FunctionDef | None]:
        """``forward`` of the layers ``for layer in self.layers`` visits (``nn.ModuleList([Block() ...])``), also
        through a slice (``self.layers[: self.config.num_hidden_layers]``, Llama's decoder loop)."""
        iterable = loop.iter
        enumerated = isinstance(iterable, nodes.Call) and self.values.qualified_name(iterable.func) == "enumerate"
        if enumerated and iterable.args:
            iterable = iterable.args[0]
        if isinstance(iterable, nodes.Subscript) and isinstance(iterable.slice, nodes.Slice):
            iterable = iterable.value  # some of the same layers
        klass = enclosing_class(loop)
        if not (isinstance(iterable, nodes.Attribute) and isinstance(iterable.expr, nodes.Name)) or klass is None:
            return [None]
        if iterable.expr.name != "self":
            return [None]
        forwards: list[nodes.FunctionDef | None] = []
        for container in assigned_self_values(klass, iterable.attrname):
            items = container.args[0] if isinstance(container, nodes.Call) and container.args else None
            elements = [items.elt] if isinstance(items, nodes.ListComp) else getattr(items, "elts", None)
            if not elements:
                return [None]
            for element in elements:
                name = self.values.qualified_name(element.func) if isinstance(element, nodes.Call) else None
                forwards.extend(self._forward_of(name or "") if name else [None])
        return forwards or [None]

    def _name_callees(self, func: nodes.Name) -> list[nodes.FunctionDef | None]:
        try:
            _, bindings = func.lookup(func.name)
        except Exception:
            return [None]
        callees: list[nodes.FunctionDef | None] = []
        for binding in bindings:
            if isinstance(binding, nodes.FunctionDef):
                callees.append(binding)
            elif isinstance(binding, nodes.AssignName) and isinstance(binding.parent, nodes.Arguments):
                callees.extend(self._decorated_by(binding.parent.parent) or [None])
            elif isinstance(binding, nodes.AssignName) and isinstance(_loop_of(binding), nodes.For):
                callees.extend(self._container_forwards(_loop_of(binding)))
            elif (method := _bound_method_of_fresh_object(binding)) is not None:
                callees.append(method)
            elif binding.root().name != "builtins":
                callees.append(None)
        return callees

    def _decorated_by(self, decorator: nodes.NodeNG) -> list[nodes.FunctionDef]:
        """Functions of this file decorated with *decorator* (``func`` in ``def capture(func): ...``)."""
        if not isinstance(decorator, nodes.FunctionDef):
            return []
        found = []
        for function in self.values.module.nodes_of_class(nodes.FunctionDef):
            for expression in function.decorators.nodes if function.decorators else ():
                name = expression.func if isinstance(expression, nodes.Call) else expression
                if isinstance(name, nodes.Name) and name.name == decorator.name:
                    found.append(function)
        return found


def _bound_method_of_fresh_object(binding: nodes.NodeNG) -> nodes.FunctionDef | None:
    """The method a name is bound to by ``g = Box(2.0).scale`` (a plain class of this file, built right there)."""
    assigned = binding.parent
    if not (isinstance(assigned, nodes.Assign) and assigned.targets == [binding]):
        return None
    return _fresh_method(assigned.value)


def _fresh_method(value: nodes.NodeNG) -> nodes.FunctionDef | None:
    """The method *value* is, when it reads one off an object of this file's plain classes built right there."""
    if not (isinstance(value, nodes.Attribute) and isinstance(value.expr, nodes.Call)):
        return None
    klass = fresh_instance_class(value.expr)
    return method_of(klass, value.attrname) if klass is not None else None


def break_finder(ctx: RuleContext) -> BreakFinder:
    """The file's :class:`BreakFinder`, counting calls of the loggers GM202 is configured with as breaks."""
    loggers = LoggerConfig.from_options(ctx.analysis.settings.options_for("GM202"))
    return BreakFinder(ctx.values, SideEffectFinder(ctx.values, loggers))
