"""Which calls in traced code are host side effects, and which already sit in an epilogue.

GM201 (print), GM202 (logging), GM203 (host I/O), GM204 (untraceable stdlib)
and the defer rewrite all ask "what is this call?"; the answer lives here once,
so that e.g. logger recognition cannot drift between a rule and the fix.

Precision matters more than recall: ``obj.info(...)`` is a logger call only
when the receiver *resolves* to a logger (a factory call, a configured logger
name, a ``logging.Logger`` annotation, or ``self.x`` assigned from a factory).
Everything Dynamo does with these calls was measured on torch 2.13 (see the
rules' docstrings for the graph-break ids).
"""

from __future__ import annotations

import enum
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from astroid import nodes

from graphmend_lint.analysis.astroid_tree import def_position
from graphmend_lint.analysis.scope import TracedFunction
from graphmend_lint.analysis.values import Kind, ValueOracle, assigned_self_values, enclosing_class

#: ``logging.Logger`` methods that emit a record (all break the graph: GB0291).
LOGGER_METHODS = frozenset({"debug", "info", "warning", "warn", "error", "exception", "critical", "fatal", "log"})
#: Hugging Face's memoised variants (transformers.utils.logging); they break the same way.
ONCE_METHODS = frozenset({"warning_once", "info_once"})
#: Module-level ``logging`` functions (they break inside logging itself: GB4841).
LOGGING_FUNCTIONS = frozenset(f"logging.{method}" for method in LOGGER_METHODS)
WARNING_FUNCTIONS = frozenset({"warnings.warn", "warnings.warn_explicit"})
DEFAULT_LOGGER_NAMES: tuple[str, ...] = ("logger", "log", "_logger", "LOGGER")
DEFAULT_LOGGER_FACTORIES: tuple[str, ...] = (
    "logging.getLogger",
    "transformers.utils.logging.get_logger",
    "transformers.logging.get_logger",
    "diffusers.utils.logging.get_logger",
)
LOGGER_TYPES = frozenset({"logging.Logger", "Logger", "logging.LoggerAdapter", "LoggerAdapter"})

_STREAMS = ("sys.stdout", "sys.stderr", "sys.__stdout__", "sys.__stderr__")
_FILE_METHODS = frozenset({"write", "writelines", "flush", "read", "readline", "readlines"})
_DEBUGGERS = frozenset({"pdb.set_trace", "ipdb.set_trace", "pdb.post_mortem"})
_CLOCKS = frozenset(
    f"time.{name}"
    for name in (
        "time", "time_ns", "perf_counter", "perf_counter_ns", "monotonic", "monotonic_ns",
        "process_time", "process_time_ns", "thread_time", "thread_time_ns",
    )
)  # fmt: skip
#: Dynamo traces these ``random`` functions itself (measured: no break), so they are not flagged.
TRACED_RANDOM = frozenset({"random.randint", "random.randrange", "random.uniform"})
_DATETIME_NOW = frozenset(
    {"datetime.datetime.now", "datetime.datetime.utcnow", "datetime.datetime.today", "datetime.date.today"}
)
_UUIDS = frozenset({"uuid.uuid1", "uuid.uuid3", "uuid.uuid4", "uuid.uuid5", "uuid.getnode"})
#: Host conversions and formatting: cheap, tensor-free work that may run after the graph.
HOST_FORMAT_BUILTINS = frozenset({"str", "repr", "format", "float", "int", "bool", "round", "len"})
HOST_FORMAT_METHODS = frozenset({"item", "tolist"})
_MAX_ALIAS_DEPTH = 4


class Effect(enum.Enum):
    """What a side-effect call does; each rule owns some of these."""

    PRINT = "print"  # GM201
    LOG = "log"  # GM202: logger methods and logging functions
    WARN = "warn"  # GM202: warnings.warn
    STREAM = "stream"  # GM203: sys.stdout / sys.stderr methods
    OPEN = "open"  # GM203
    FILE_IO = "file-io"  # GM203: methods of a handle from open()
    INPUT = "input"  # GM203
    DEBUGGER = "debugger"  # GM203: breakpoint(), pdb.set_trace()
    CLOCK = "clock"  # GM204
    RANDOM = "random"  # GM204
    DATETIME = "datetime"  # GM204
    UUID = "uuid"  # GM204


#: Effects the defer rewrite moves to the epilogue (GM201 and GM202).
DEFERRABLE = frozenset({Effect.PRINT, Effect.LOG, Effect.WARN})


@dataclass(frozen=True)
class LoggerConfig:
    """GM202's options: which names and factories mean "a logger"."""

    names: frozenset[str] = frozenset(DEFAULT_LOGGER_NAMES)
    factories: frozenset[str] = frozenset(DEFAULT_LOGGER_FACTORIES)

    @classmethod
    def from_options(cls, options: Mapping[str, Any]) -> LoggerConfig:
        return cls(
            names=frozenset(options.get("logger-names", DEFAULT_LOGGER_NAMES)),
            factories=frozenset(options.get("logger-factories", DEFAULT_LOGGER_FACTORIES)),
        )


@dataclass(frozen=True)
class SideEffect:
    """One recognised call: what it does and how to name it in a message."""

    effect: Effect
    label: str  # e.g. "logger.warning_once()", "sys.stdout.write()"


def compiled_with_fullgraph(traced: TracedFunction) -> bool:
    """``torch.compile(..., fullgraph=True)`` put the function in scope: any break is an error.

    An epilogue call still breaks there, so nothing counts as already deferred
    and deferring cannot help.
    """
    return "fullgraph=True" in traced.chain[0].replace(" ", "") if traced.chain else False


def is_builtin_call(call: nodes.Call, name: str) -> bool:
    """``name(...)`` where *name* is the builtin, not a local or imported shadow."""
    func = call.func
    if not isinstance(func, nodes.Name) or func.name != name:
        return False
    try:
        _, assignments = func.lookup(name)
    except Exception:  # astroid lookups can fail on odd code; stay quiet
        return False
    return all(assignment.root().name == "builtins" for assignment in assignments)


def dotted(node: nodes.NodeNG) -> str | None:
    """``a.b.c`` for a chain of attributes on a name (unresolved), else ``None``."""
    parts: list[str] = []
    while isinstance(node, nodes.Attribute):
        parts.append(node.attrname)
        node = node.expr
    if not isinstance(node, nodes.Name):
        return None
    parts.append(node.name)
    return ".".join(reversed(parts))


class SideEffectFinder:
    """Classify calls of one file. Stateless apart from the oracle it reads."""

    def __init__(self, values: ValueOracle, loggers: LoggerConfig | None = None) -> None:
        self.values = values
        self.loggers = loggers or LoggerConfig()

    def classify(self, call: nodes.Call) -> SideEffect | None:
        """The side effect *call* performs, or ``None`` for an ordinary call."""
        func = call.func
        if isinstance(func, nodes.Name):
            return self._builtin(call)
        if not isinstance(func, nodes.Attribute):
            return None
        qualified = self.values.qualified_name(func)
        if qualified is not None and _imported(func):
            found = self._qualified(qualified, func)
            if found is not None:
                return found
        if func.attrname in LOGGER_METHODS | ONCE_METHODS and self.is_logger(func.expr):
            return SideEffect(Effect.LOG, f"{_receiver_label(func.expr)}.{func.attrname}()")
        if func.attrname in _FILE_METHODS and self._is_open_handle(func.expr):
            return SideEffect(Effect.FILE_IO, f"file.{func.attrname}()")
        return None

    # -- by name ----------------------------------------------------------------

    def _builtin(self, call: nodes.Call) -> SideEffect | None:
        for name, effect in (("print", Effect.PRINT), ("open", Effect.OPEN), ("input", Effect.INPUT),
                             ("breakpoint", Effect.DEBUGGER)):  # fmt: skip
            if is_builtin_call(call, name):
                return SideEffect(effect, f"{name}()")
        qualified = self.values.qualified_name(call.func)  # from time import perf_counter
        if qualified is not None and _imported(call.func):
            return self._qualified(qualified, call.func)
        return None

    def _qualified(self, name: str, func: nodes.NodeNG) -> SideEffect | None:
        if name in LOGGING_FUNCTIONS:
            return SideEffect(Effect.LOG, f"{name}()")
        if name in WARNING_FUNCTIONS:
            return SideEffect(Effect.WARN, f"{name}()")
        if name.startswith(tuple(f"{stream}." for stream in _STREAMS)):
            return SideEffect(Effect.STREAM, f"{name}()")
        if name in _DEBUGGERS:
            return SideEffect(Effect.DEBUGGER, f"{name}()")
        if name in _CLOCKS:
            return SideEffect(Effect.CLOCK, f"{name}()")
        if name.startswith("random.") and name.count(".") == 1 and name not in TRACED_RANDOM:
            return SideEffect(Effect.RANDOM, f"{name}()")
        if name in _DATETIME_NOW:
            return SideEffect(Effect.DATETIME, f"{name}()")
        if name in _UUIDS:
            return SideEffect(Effect.UUID, f"{name}()")
        if name in {"io.open", "builtins.open"}:
            return SideEffect(Effect.OPEN, f"{name}()")
        return None

    # -- loggers ----------------------------------------------------------------

    def is_logger(self, receiver: nodes.NodeNG, depth: int = 0) -> bool:
        """Whether *receiver* evaluates to a logger (see the module docstring)."""
        if depth > _MAX_ALIAS_DEPTH:
            return False
        if isinstance(receiver, nodes.Call):
            return self._is_factory_call(receiver)
        if isinstance(receiver, nodes.Name):
            if receiver.name in self.loggers.names:
                return True
            return any(self._binds_logger(binding, depth) for binding in _bindings(receiver))
        if isinstance(receiver, nodes.Attribute):
            if isinstance(receiver.expr, nodes.Name) and receiver.expr.name == "self":
                return receiver.attrname in self.loggers.names or any(
                    self.is_logger(value, depth + 1) for value in _self_assignments(receiver)
                )
            base = self.values.qualified_name(receiver.expr)
            # ``some_module.logger``: an imported module's logger
            return receiver.attrname in self.loggers.names and base is not None and self.values.imports.is_imported(
                base.partition(".")[0]
            )
        return False

    def _is_factory_call(self, call: nodes.Call) -> bool:
        name = self.values.qualified_name(call.func)
        return name is not None and name in self.loggers.factories

    def _binds_logger(self, binding: nodes.NodeNG, depth: int) -> bool:
        parent = binding.parent
        if isinstance(binding, nodes.AssignName) and isinstance(parent, (nodes.Assign, nodes.AnnAssign)):
            if isinstance(parent, nodes.AnnAssign) and _annotation_is_logger(parent.annotation):
                return True
            return parent.value is not None and self.is_logger(parent.value, depth + 1)
        if isinstance(binding, nodes.AssignName) and isinstance(parent, nodes.Arguments):
            annotation = ValueOracle._annotation_of(binding, parent)  # one reading of annotations, the oracle's
            return annotation is not None and _annotation_is_logger(annotation)
        return False

    def _is_open_handle(self, receiver: nodes.NodeNG) -> bool:
        """``f`` bound by ``f = open(...)`` or ``with open(...) as f``."""
        if not isinstance(receiver, nodes.Name):
            return False
        for binding in _bindings(receiver):
            parent = binding.parent
            if isinstance(parent, nodes.Assign) and isinstance(parent.value, nodes.Call) and is_builtin_call(parent.value, "open"):
                return True
            if isinstance(parent, nodes.With):
                for item, alias in parent.items:
                    if alias is binding and isinstance(item, nodes.Call) and is_builtin_call(item, "open"):
                        return True
        return False

    # -- epilogue ---------------------------------------------------------------

    def in_epilogue(self, call: nodes.Call, function: nodes.FunctionDef) -> bool:
        """Whether *call* already runs after the function's last tensor op.

        Measured on torch 2.13: side effects placed after all tensor work and
        right before a ``return`` of plain names (or at the end of the
        function) leave one graph. Dynamo still logs each as a break, but no
        second graph forms, so such calls are not findings. This is also how
        the calls the defer fix moved are recognised, so a second ``--fix``
        changes nothing. An epilogue is a run of statements, each a
        side-effect call with cheap arguments (names, constants, formatting,
        ``.item()``), an ``if <flag>:`` holding only such calls, or a
        ``list(map(lambda ...: <call>, <list>))`` replay, followed by a
        trivial ``return`` or the end of the function. It may sit in an
        ``if`` or ``for`` but not in ``with``/``try``/``while``, where a
        break still splits the graph or skips the frame (measured).
        """
        traced = self.values.scope.function_at(*def_position(function))
        if traced is not None and self.values.scope.is_inlined(traced.qualname):
            return False  # inlined into a traced caller: its "epilogue" sits mid-graph there
        statement = self._epilogue_statement(call)
        if statement is None or not self._is_epilogue_statement(statement):
            return False
        if not _only_plain_blocks_between(statement, function):
            return False
        sibling = statement.next_sibling()
        while sibling is not None:
            if isinstance(sibling, nodes.Return):
                return is_trivial_value(sibling.value)
            if not self._is_epilogue_statement(sibling):
                return False
            sibling = sibling.next_sibling()
        return statement.parent is function

    def _epilogue_statement(self, call: nodes.Call) -> nodes.NodeNG | None:
        """The statement of the block that holds *call* (climbing out of a replay)."""
        node: nodes.NodeNG = call
        while isinstance(node.parent, nodes.IfExp):
            node = node.parent
        if isinstance(node.parent, nodes.Lambda):
            replay = node.parent.parent
            listing = replay.parent if isinstance(replay, nodes.Call) else None
            node = listing if listing is not None and _is_map_replay(listing) else call
        statement = node.parent if isinstance(node.parent, nodes.Expr) else None
        if statement is None:
            return None
        flag = statement.parent
        if isinstance(flag, nodes.If) and _is_flag_test(flag.test) and not flag.orelse and statement in flag.body:
            return flag
        return statement

    def _is_epilogue_statement(self, statement: nodes.NodeNG) -> bool:
        if isinstance(statement, nodes.If):
            return (
                _is_flag_test(statement.test)
                and not statement.orelse
                and all(self._is_epilogue_statement(inner) for inner in statement.body)
            )
        if not isinstance(statement, nodes.Expr) or not isinstance(statement.value, nodes.Call):
            return False
        call = statement.value
        if _is_map_replay(call):
            lambda_body = call.args[0].args[0].body
            return all(self._is_cheap_replay_call(c) for c in _conditional_calls(lambda_body))
        return self._is_cheap_replay_call(call)

    def _is_cheap_replay_call(self, call: nodes.NodeNG) -> bool:
        if not isinstance(call, nodes.Call):
            return False
        effect = self.classify(call)
        if effect is None or effect.effect not in DEFERRABLE:
            return False
        arguments = [*call.args, *(keyword.value for keyword in call.keywords or [])]
        return all(self.is_cheap(argument) for argument in arguments)

    def is_cheap(self, node: nodes.NodeNG) -> bool:
        """Tensor-free host work: it may run after the graph without starting a new one."""
        if isinstance(node, (nodes.Const, nodes.Name)):
            return True
        if isinstance(node, nodes.Attribute):
            return dotted(node) is not None
        if isinstance(node, nodes.Starred):
            return self.is_cheap(node.value)
        if isinstance(node, nodes.JoinedStr):
            return all(self.is_cheap(value) for value in node.values)
        if isinstance(node, nodes.FormattedValue):
            return self.is_cheap(node.value) and (node.format_spec is None or self.is_cheap(node.format_spec))
        if isinstance(node, (nodes.Tuple, nodes.List)):
            return all(self.is_cheap(element) for element in node.elts)
        if isinstance(node, nodes.Subscript):
            return self.values.kind(node.value) is not Kind.TENSOR and self.is_cheap(node.value)
        if isinstance(node, nodes.BinOp):
            return is_percent_format(node) and self.is_cheap(node.right)
        if isinstance(node, nodes.Call):
            operands = host_format_operands(node)
            return operands is not None and all(self.is_cheap(operand) for operand in operands)
        return False


# -- helpers shared with the defer rewrite ---------------------------------------------


def is_percent_format(node: nodes.BinOp) -> bool:
    """``"fmt %s" % args``: formatting, whatever the operands."""
    return node.op == "%" and isinstance(node.left, nodes.Const) and isinstance(node.left.value, str)


def host_format_operands(call: nodes.Call) -> list[nodes.NodeNG] | None:
    """The operands of a host conversion/formatting call, or ``None`` when it is not one.

    ``str(x)``, ``float(x)``, ``x.item()``, ``"{}".format(x)``: the conversion
    itself is cheap host work; only its operands may be tensor computations.
    """
    if call.keywords and any(keyword.arg is None for keyword in call.keywords):
        return None
    keywords = [keyword.value for keyword in call.keywords or []]
    func = call.func
    if isinstance(func, nodes.Name) and func.name in HOST_FORMAT_BUILTINS and is_builtin_call(call, func.name):
        return [*call.args, *keywords]
    if isinstance(func, nodes.Attribute):
        if func.attrname in HOST_FORMAT_METHODS and not call.args and not keywords:
            return [func.expr]
        if func.attrname == "format" and isinstance(func.expr, nodes.Const) and isinstance(func.expr.value, str):
            return [*call.args, *keywords]
    return None


def is_trivial_value(value: nodes.NodeNG | None) -> bool:
    """A return value that costs no tensor work: names, constants, tuples of them."""
    if value is None or isinstance(value, (nodes.Const, nodes.Name)):
        return True
    if isinstance(value, nodes.Attribute):
        return dotted(value) is not None
    if isinstance(value, (nodes.Tuple, nodes.List)):
        return all(is_trivial_value(element) for element in value.elts)
    return False


def _is_flag_test(test: nodes.NodeNG) -> bool:
    return isinstance(test, nodes.Name)


def _is_map_replay(call: nodes.NodeNG) -> bool:
    """``list(map(lambda <p>: <call>, <name>))``, the replay of calls made in a loop."""
    if not (isinstance(call, nodes.Call) and isinstance(call.func, nodes.Name) and call.func.name == "list"):
        return False
    if len(call.args) != 1 or call.keywords:
        return False
    inner = call.args[0]
    return (
        isinstance(inner, nodes.Call)
        and isinstance(inner.func, nodes.Name)
        and inner.func.name == "map"
        and len(inner.args) == 2
        and isinstance(inner.args[0], nodes.Lambda)
        and isinstance(inner.args[1], nodes.Name)
    )


def _conditional_calls(body: nodes.NodeNG) -> Iterator[nodes.NodeNG]:
    """The branches of ``a if t1 else b if t2 else c``."""
    while isinstance(body, nodes.IfExp):
        yield body.body
        body = body.orelse
    yield body


def _only_plain_blocks_between(statement: nodes.NodeNG, function: nodes.FunctionDef) -> bool:
    """No ``with``/``try``/``while`` between *statement* and *function*."""
    node = statement.parent
    while node is not None and node is not function:
        if isinstance(node, (nodes.With, nodes.Try, nodes.TryStar, nodes.While, nodes.FunctionDef, nodes.Lambda)):
            return False
        node = node.parent
    return node is function


def _imported(func: nodes.NodeNG) -> bool:
    """The name at the root of ``a.b.c`` is bound by an import (not a parameter or local)."""
    while isinstance(func, nodes.Attribute):
        func = func.expr
    if not isinstance(func, nodes.Name):
        return False
    bindings = _bindings(func)
    return bool(bindings) and all(isinstance(b, (nodes.Import, nodes.ImportFrom)) for b in bindings)


def _bindings(name: nodes.Name) -> list[nodes.NodeNG]:
    try:
        _, assignments = name.lookup(name.name)
    except Exception:  # astroid lookups can fail on odd code; stay quiet
        return []
    return list(assignments)


def _self_assignments(attribute: nodes.Attribute) -> Iterator[nodes.NodeNG]:
    """Values assigned to ``self.<attr>`` anywhere in the enclosing class."""
    klass = enclosing_class(attribute)
    return assigned_self_values(klass, attribute.attrname) if klass is not None else iter(())


def _annotation_is_logger(annotation: nodes.NodeNG) -> bool:
    text = annotation.as_string().replace(" ", "").strip("'\"")
    return text in LOGGER_TYPES


def _receiver_label(receiver: nodes.NodeNG) -> str:
    name = dotted(receiver)
    return name if name is not None else "logger"
