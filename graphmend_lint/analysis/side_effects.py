"""Which calls in traced code are host side effects.

GM201 (print), GM202 (logging), GM203 (host I/O), GM204 (untraceable stdlib)
and their fixes all ask "what is this call?"; the answer lives here once,
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
from functools import cached_property
from typing import Any

from astroid import nodes

from graphmend_lint.analysis.lookup import is_builtin_call, reaching_bindings
from graphmend_lint.analysis.values import ValueOracle, assigned_self_values, enclosing_class
from graphmend_lint.analysis.walk import dotted

#: ``logging.Logger`` methods that emit a record (all break the graph: GB0291).
LOGGER_METHODS = frozenset({"debug", "info", "warning", "warn", "error", "exception", "critical", "fatal", "log"})
#: Hugging Face's memoised variants (transformers.utils.logging); they break the same way.
ONCE_METHODS = frozenset({"warning_once", "info_once"})
#: ``logging.Logger`` methods that change its configuration: Dynamo refuses every logger method (GB0291,
#: measured on torch 2.13), and the change must still happen under ``torch.compile``, so no guard is offered.
LOGGER_SETTERS = frozenset({"setLevel", "addHandler", "removeHandler", "addFilter", "removeFilter"})
#: Module-level ``logging`` functions (they break inside logging itself: GB4841).
LOGGING_FUNCTIONS = frozenset(f"logging.{method}" for method in LOGGER_METHODS)
WARNING_FUNCTIONS = frozenset({"warnings.warn", "warnings.warn_explicit"})
#: Changing the warning filters: ``warnings`` is skipped (GB0007 in warnings.py); inside
#: ``with warnings.catch_warnings():`` Dynamo cannot rebuild the context at the break and gives up on the
#: function (GB0092 at the call; measured, torch 2.13).
WARNING_FILTER_FUNCTIONS = frozenset({"warnings.simplefilter", "warnings.filterwarnings", "warnings.resetwarnings"})
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
#: NumPy's random-number objects: every method call on one is a call Dynamo does not support (GB0156, measured
#: on torch 2.13 for ``default_rng(...).integers``, ``RandomState(...).beta`` and ``.choice``).
NUMPY_GENERATORS = frozenset(
    {"numpy.random.default_rng", "numpy.random.RandomState", "numpy.random.Generator", "numpy.random.mtrand.RandomState"}
)
#: tqdm's progress bars: Dynamo skips building one (GB0007) and breaks again at each step or method call
#: (GB0008), measured on torch 2.13 for ``for i in tqdm(range(n))`` and ``pbar.update(1)``.
PROGRESS_BARS = frozenset(
    f"tqdm.{module}{factory}"
    for module in ("", "auto.", "notebook.", "std.", "rich.", "asyncio.")
    for factory in ("tqdm", "trange")
)
#: Methods of a progress bar, each a call into tqdm's skipped code.
_PROGRESS_METHODS = frozenset(
    {"update", "set_description", "set_description_str", "set_postfix", "set_postfix_str", "close", "refresh",
     "reset", "write", "clear", "display", "unpause"}
)  # fmt: skip
_CLOCKS = frozenset(
    f"time.{name}"
    for name in (
        "time", "time_ns", "perf_counter", "perf_counter_ns", "monotonic", "monotonic_ns",
        "process_time", "process_time_ns", "thread_time", "thread_time_ns",
    )
)  # fmt: skip
#: Dynamo traces these ``random`` functions itself (measured: no break), so they are not flagged.
TRACED_RANDOM = frozenset({"random.randint", "random.randrange", "random.uniform", "random.Random"})
#: Seeding torch's RNG: Dynamo skips these functions (GB0007, measured on ``torch.manual_seed(3)``).
TORCH_SEEDERS = frozenset(
    {"torch.manual_seed", "torch.random.manual_seed", "torch.cuda.manual_seed", "torch.cuda.manual_seed_all"}
)
#: ``np.random`` functions Dynamo traces as torch ops (``torch._numpy.random.__all__`` in torch 2.13);
#: every other ``np.random`` function is unsupported (GB0294: ``np.random.beta``, ``permutation``).
TRACED_NUMPY_RANDOM = frozenset(
    {"seed", "random_sample", "sample", "random", "rand", "randn", "normal", "choice", "randint", "shuffle", "uniform"}
)
#: Traced ``np.random`` functions that return a Python scalar without a size, through ``.item()`` (GB0033),
#: with the position of their ``size`` argument (``None``: sizes are the positional arguments themselves).
_SCALAR_WITHOUT_SIZE: dict[str, int | None] = {
    "rand": None, "randn": None, "random": 0, "random_sample": 0, "sample": 0,
    "uniform": 2, "normal": 2, "randint": 2,
}  # fmt: skip
#: Host conversions of a traced NumPy array: each reads its data (GB0033).
_NUMPY_HOST_READS = frozenset({"item", "tolist"})
_DATETIME_NOW = frozenset(
    {"datetime.datetime.now", "datetime.datetime.utcnow", "datetime.datetime.today", "datetime.date.today"}
)
_UUIDS = frozenset({"uuid.uuid1", "uuid.uuid3", "uuid.uuid4", "uuid.uuid5", "uuid.getnode"})
#: Host queries and byte utilities in modules Dynamo skips, each measured to break on torch 2.13 (GB0007;
#: GB0156 for ``json``). Left out: ``copy.copy`` (it traces on an instance of a user class),
#: ``heapq.nlargest``/``nsmallest`` (they break on a literal list and trace on one the frame receives), and
#: ``os.path`` helpers, ``platform`` and ``tempfile`` (they trace).
SKIPPED_HOST_FUNCTIONS = frozenset(
    {
        "time.sleep", "gc.collect", "getpass.getuser", "glob.glob", "socket.gethostname",
        "os.getpid", "os.getppid", "os.getcwd", "os.listdir", "os.urandom", "os.cpu_count",
        "sys.getsizeof", "sys.getrefcount", "pickle.dumps", "pickle.loads", "json.dumps", "json.loads",
        "zlib.crc32", "zlib.adler32", "base64.b64encode", "base64.b64decode", "hashlib.md5", "hashlib.sha256",
        "heapq.heappush", "heapq.heappop", "heapq.heapify",
        "bisect.bisect", "bisect.bisect_left", "bisect.bisect_right", "bisect.insort",
    }
)  # fmt: skip
#: ``print`` spelled through its module, and the pretty-printer (GB0059 for ``builtins.print``; GB0207 for
#: ``pprint.pprint`` of a dict, which sorts its keys; measured on torch 2.13).
_PRINTS = frozenset({"builtins.print", "pprint.pprint", "pprint.pp"})
#: Host conversions and formatting: cheap, tensor-free work that may run after the graph.
HOST_FORMAT_BUILTINS = frozenset({"str", "repr", "format", "float", "int", "bool", "round", "len"})
HOST_FORMAT_METHODS = frozenset({"item", "tolist"})
_MAX_ALIAS_DEPTH = 4


class Effect(enum.Enum):
    """What a side-effect call does; each rule owns some of these."""

    PRINT = "print"  # GM201
    LOG = "log"  # GM202: logger methods and logging functions
    LOGGER_CONFIG = "logger-config"  # GM202: logger.setLevel / addHandler ...
    WARN = "warn"  # GM202: warnings.warn
    STREAM = "stream"  # GM203: sys.stdout / sys.stderr methods
    OPEN = "open"  # GM203
    FILE_IO = "file-io"  # GM203: methods of a handle from open()
    INPUT = "input"  # GM203
    DEBUGGER = "debugger"  # GM203: breakpoint(), pdb.set_trace()
    PROGRESS_BAR = "progress-bar"  # GM203: tqdm bars, built or stepped
    CLOCK = "clock"  # GM204
    RANDOM = "random"  # GM204
    NUMPY_RANDOM = "numpy-random"  # GM204: np.random draws Dynamo cannot keep in the graph
    NUMPY_GENERATOR = "numpy-generator"  # GM204: methods of a NumPy Generator / RandomState object
    SEED = "seed"  # GM204: torch.manual_seed
    DATETIME = "datetime"  # GM204
    UUID = "uuid"  # GM204
    WARNING_FILTER = "warning-filter"  # GM204: warnings.simplefilter / filterwarnings / resetwarnings
    SKIPPED_HOST = "skipped-host"  # GM204: host queries and byte utilities of skipped modules (time.sleep, heapq)


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


class SideEffectFinder:
    """Classify calls of one file. Stateless apart from the oracle it reads."""

    def __init__(self, values: ValueOracle, loggers: LoggerConfig | None = None) -> None:
        self.values = values
        self.loggers = loggers or LoggerConfig()
        self._attribute_values: dict[str, list[nodes.NodeNG]] | None = None

    def classify(self, call: nodes.Call) -> SideEffect | None:
        """The side effect *call* performs, or ``None`` for an ordinary call."""
        func = call.func
        if isinstance(func, nodes.Name):
            return self._builtin(call)
        if not isinstance(func, nodes.Attribute):
            return None
        qualified = self.values.qualified_name(func)
        if qualified is not None and imported(func):
            found = self._qualified(qualified, func)
            if found is not None:
                return found
        if func.attrname in LOGGER_METHODS | ONCE_METHODS and self.is_logger(func.expr, method=func.attrname):
            return SideEffect(Effect.LOG, f"{_receiver_label(func.expr)}.{func.attrname}()")
        if func.attrname in LOGGER_SETTERS and self.is_logger(func.expr, method=func.attrname):
            return SideEffect(Effect.LOGGER_CONFIG, f"{_receiver_label(func.expr)}.{func.attrname}()")
        if func.attrname in _FILE_METHODS and self._is_open_handle(func.expr):
            return SideEffect(Effect.FILE_IO, f"file.{func.attrname}()")
        if self._builds_numpy_generators and self._is_numpy_generator(func.expr):
            return SideEffect(Effect.NUMPY_GENERATOR, f"{_receiver_label(func.expr)}.{func.attrname}()")
        if func.attrname in _PROGRESS_METHODS and self._is_progress_bar(func.expr):
            return SideEffect(Effect.PROGRESS_BAR, f"{_receiver_label(func.expr)}.{func.attrname}()")
        return None

    # -- by name ----------------------------------------------------------------

    def _builtin(self, call: nodes.Call) -> SideEffect | None:
        for name, effect in (("print", Effect.PRINT), ("open", Effect.OPEN), ("input", Effect.INPUT),
                             ("breakpoint", Effect.DEBUGGER)):  # fmt: skip
            if is_builtin_call(call, name):
                return SideEffect(effect, f"{name}()")
        qualified = self.values.qualified_name(call.func)  # from time import perf_counter
        if qualified is not None and imported(call.func):
            return self._qualified(qualified, call.func)
        return None

    def _qualified(self, name: str, func: nodes.NodeNG) -> SideEffect | None:
        if name in _PRINTS:
            return SideEffect(Effect.PRINT, f"{name}()")
        if name in LOGGING_FUNCTIONS:
            return SideEffect(Effect.LOG, f"{name}()")
        if name in WARNING_FUNCTIONS:
            return SideEffect(Effect.WARN, f"{name}()")
        if name in WARNING_FILTER_FUNCTIONS:
            return SideEffect(Effect.WARNING_FILTER, f"{name}()")
        if name.startswith(tuple(f"{stream}." for stream in _STREAMS)):
            return SideEffect(Effect.STREAM, f"{name}()")
        if name in _DEBUGGERS:
            return SideEffect(Effect.DEBUGGER, f"{name}()")
        if name in _CLOCKS:
            return SideEffect(Effect.CLOCK, f"{name}()")
        if name.startswith("random.") and name.count(".") == 1 and name not in TRACED_RANDOM:
            return SideEffect(Effect.RANDOM, f"{name}()")
        if name in TORCH_SEEDERS:
            return SideEffect(Effect.SEED, f"{name}()")
        if name.startswith("numpy.random.") and name.count(".") == 2 and _numpy_random_breaks(func, name.rpartition(".")[2]):
            return SideEffect(Effect.NUMPY_RANDOM, f"np.random.{name.rpartition('.')[2]}()")
        if name in _DATETIME_NOW:
            return SideEffect(Effect.DATETIME, f"{name}()")
        if name in _UUIDS:
            return SideEffect(Effect.UUID, f"{name}()")
        if name in SKIPPED_HOST_FUNCTIONS:
            return SideEffect(Effect.SKIPPED_HOST, f"{name}()")
        if name in {"io.open", "builtins.open"}:
            return SideEffect(Effect.OPEN, f"{name}()")
        if name in PROGRESS_BARS or name.rpartition(".")[0] in PROGRESS_BARS:  # ``tqdm(...)``, ``tqdm.write(...)``
            return SideEffect(Effect.PROGRESS_BAR, f"{name}()")
        return None

    # -- loggers ----------------------------------------------------------------

    def is_logger(self, receiver: nodes.NodeNG, depth: int = 0, method: str | None = None) -> bool:
        """Whether *receiver* evaluates to a logger (see the module docstring).

        A logger's name (``logger``) alone does not say so when the call is of *method* and a class of this
        file defines that method: RL and training code passes its own ``Logger`` around (pytorch_sac's
        ``logger.log('train_critic/loss', critic_loss, step)``), whose method Dynamo traces like any other,
        so a break in it is logged inside it, never at the call."""
        if depth > _MAX_ALIAS_DEPTH:
            return False
        named = method not in self._local_methods
        if isinstance(receiver, nodes.Call):
            return self._is_factory_call(receiver, depth)
        if isinstance(receiver, nodes.Name):
            if named and receiver.name in self.loggers.names:
                return True
            return any(self._binds_logger(binding, depth) for binding in name_bindings(receiver))
        if isinstance(receiver, nodes.Attribute):
            if isinstance(receiver.expr, nodes.Name) and receiver.expr.name == "self":
                return named and receiver.attrname in self.loggers.names or any(
                    self.is_logger(value, depth + 1) for value in _self_assignments(receiver)
                )
            base = self.values.qualified_name(receiver.expr)
            # ``some_module.logger``: an imported module's logger
            return receiver.attrname in self.loggers.names and base is not None and self.values.imports.is_imported(
                base.partition(".")[0]
            )
        return False

    @cached_property
    def _local_methods(self) -> frozenset[str]:
        """Methods the file's own classes define, other than those derived from the logging classes."""
        found: set[str] = set()
        for klass in self.values.module.nodes_of_class(nodes.ClassDef):
            if any(base.as_string() in LOGGER_TYPES for base in klass.bases):  # ``class L(logging.Logger)``
                continue
            found.update(item.name for item in klass.body if isinstance(item, nodes.FunctionDef))
        return frozenset(found)

    def _is_factory_call(self, call: nodes.Call, depth: int = 0) -> bool:
        """A logger factory's call, or ``parent.getChild(name)`` of a logger (a child logger is a logger)."""
        func = call.func
        if isinstance(func, nodes.Attribute) and func.attrname == "getChild":
            return self.is_logger(func.expr, depth + 1)
        name = self.values.qualified_name(func)
        return name is not None and name in self.loggers.factories

    def _binds_logger(self, binding: nodes.NodeNG, depth: int) -> bool:
        parent = binding.parent
        if isinstance(binding, nodes.AssignName) and isinstance(parent, (nodes.Assign, nodes.AnnAssign)):
            if isinstance(parent, nodes.AnnAssign) and self._annotation_is_logger(parent.annotation):
                return True
            return parent.value is not None and self.is_logger(parent.value, depth + 1)
        if isinstance(binding, nodes.AssignName) and isinstance(parent, nodes.Arguments):
            annotation = ValueOracle._annotation_of(binding, parent)  # one reading of annotations, the oracle's
            return annotation is not None and self._annotation_is_logger(annotation)
        return False

    def _annotation_is_logger(self, annotation: nodes.NodeNG) -> bool:
        types = self.values.annotated_types(annotation)
        return bool(types) and types <= LOGGER_TYPES

    def _is_numpy_generator(self, receiver: nodes.NodeNG, depth: int = 0) -> bool:
        """``rng`` bound by ``rng = np.random.default_rng(...)`` / ``RandomState(...)``, ``self.rng`` assigned one,
        ``obj.rng`` where every ``<anything>.rng = ...`` of the file assigns one (sgm's ``embedder.ucg_prng``), a
        parameter every call passes one for, or ``given or np.random.RandomState()`` over such values (Spotlight's
        ``self._random_state = random_state or np.random.RandomState()``, then ``random_state.randint(...)`` in
        the sampling helper it is passed to: GB0156, measured)."""
        if depth > _MAX_ALIAS_DEPTH:
            return False
        if self._builds_numpy_generator(receiver):
            return True
        if isinstance(receiver, nodes.BoolOp) and receiver.op == "or":
            # ``given or np.random.RandomState()``: a given value is one too, or an argument no call here shows
            # (the model is built in another file, or in a function the linter does not read): a generator
            # method called on the result says it is a generator (an int seed would fail eagerly)
            *given, fallback = receiver.values
            return self._is_numpy_generator(fallback, depth + 1) and all(
                self._is_numpy_generator(value, depth + 1) or self._unshown_argument(value) for value in given
            )
        if isinstance(receiver, nodes.Attribute) and not (isinstance(receiver.expr, nodes.Name) and receiver.expr.name == "self"):
            assigned = self._attribute_assignments(receiver.attrname)
        elif isinstance(receiver, (nodes.Name, nodes.Attribute)):
            assigned = self.values.value_sources(receiver) or []
        else:
            return False
        return bool(assigned) and all(self._is_numpy_generator(value, depth + 1) for value in assigned)

    def _unshown_argument(self, value: nodes.NodeNG) -> bool:
        """*value* is a parameter of its function, and no call of it in what the linter reads passes it."""
        if not isinstance(value, nodes.Name):
            return False
        bindings = name_bindings(value)
        return (
            bool(bindings)
            and all(isinstance(binding.parent, nodes.Arguments) for binding in bindings)
            and self.values.value_sources(value) is None
        )

    @cached_property
    def _builds_numpy_generators(self) -> bool:
        """Some call of the file is spelled like a NumPy generator's construction: else no receiver can hold one,
        and no method call needs its bindings looked up."""
        return any(self.values.calls_named(name.rpartition(".")[2]) for name in NUMPY_GENERATORS)

    def _attribute_assignments(self, attribute: str) -> list[nodes.NodeNG]:
        """What every ``<anything>.<attribute> = value`` of the module assigns."""
        if self._attribute_values is None:
            self._attribute_values = {}
            for target in self.values.module.nodes_of_class(nodes.AssignAttr):
                if isinstance(target.parent, nodes.Assign):
                    self._attribute_values.setdefault(target.attrname, []).append(target.parent.value)
        return self._attribute_values.get(attribute, [])

    def _builds_numpy_generator(self, value: nodes.NodeNG) -> bool:
        return isinstance(value, nodes.Call) and (self.values.qualified_name(value.func) or "") in NUMPY_GENERATORS

    def _is_progress_bar(self, receiver: nodes.NodeNG) -> bool:
        """``pbar`` bound by ``pbar = tqdm(...)`` or ``with tqdm(...) as pbar``, or ``self.pbar`` assigned one."""
        if isinstance(receiver, nodes.Attribute) and isinstance(receiver.expr, nodes.Name) and receiver.expr.name == "self":
            return any(self._builds_progress_bar(value) for value in _self_assignments(receiver))
        if not isinstance(receiver, nodes.Name):
            return False
        for binding in name_bindings(receiver):
            parent = binding.parent
            if isinstance(parent, nodes.Assign) and self._builds_progress_bar(parent.value):
                return True
            if isinstance(parent, nodes.With) and any(
                alias is binding and self._builds_progress_bar(item) for item, alias in parent.items
            ):
                return True
        return False

    def _builds_progress_bar(self, value: nodes.NodeNG) -> bool:
        return isinstance(value, nodes.Call) and (self.values.qualified_name(value.func) or "") in PROGRESS_BARS

    def _is_open_handle(self, receiver: nodes.NodeNG) -> bool:
        """``f`` bound by ``f = open(...)`` or ``with open(...) as f``."""
        if not isinstance(receiver, nodes.Name):
            return False
        for binding in name_bindings(receiver):
            parent = binding.parent
            if isinstance(parent, nodes.Assign) and isinstance(parent.value, nodes.Call) and is_builtin_call(parent.value, "open"):
                return True
            if isinstance(parent, nodes.With):
                for item, alias in parent.items:
                    if alias is binding and isinstance(item, nodes.Call) and is_builtin_call(item, "open"):
                        return True
        return False


def _numpy_random_breaks(func: nodes.NodeNG, name: str) -> bool:
    """``np.random.<name>(...)`` that Dynamo cannot trace, or whose draw it must read on the host.

    Measured on torch 2.13: functions outside ``torch._numpy.random`` break
    (GB0294); ``choice`` checks its probabilities with a data-dependent ``if``
    (GB0033); the others draw a 0-d tensor and turn it into a Python scalar
    when no size is given (``np.random.rand() < p``: GB0033), and a sized draw
    breaks where ``.item()``/``.tolist()`` reads it. ``seed``, ``shuffle`` and
    sized draws that stay arrays are traced.
    """
    call = func.parent
    if not isinstance(call, nodes.Call) or call.func is not func:
        return False
    if name not in TRACED_NUMPY_RANDOM or name == "choice":
        return True
    if name in _SCALAR_WITHOUT_SIZE:
        size_position = _SCALAR_WITHOUT_SIZE[name]
        sized = any(k.arg == "size" for k in call.keywords or ()) or (
            bool(call.args) if size_position is None else len(call.args) > size_position
        )
        if not sized:
            return True
    reader = call.parent
    return (
        isinstance(reader, nodes.Attribute)
        and reader.attrname in _NUMPY_HOST_READS
        and isinstance(reader.parent, nodes.Call)
        and reader.parent.func is reader
    )


def imported(func: nodes.NodeNG) -> bool:
    """The name at the root of ``a.b.c`` is bound by an import (not a parameter or local)."""
    while isinstance(func, nodes.Attribute):
        func = func.expr
    if not isinstance(func, nodes.Name):
        return False
    bindings = name_bindings(func)
    return bool(bindings) and all(isinstance(b, (nodes.Import, nodes.ImportFrom)) for b in bindings)


def name_bindings(name: nodes.Name) -> list[nodes.NodeNG]:
    """What *name* may be bound to where it is read (astroid's scoped lookup; empty when unknown)."""
    try:
        return reaching_bindings(name)
    except Exception:  # astroid lookups can fail on odd code; stay quiet
        return []


def _self_assignments(attribute: nodes.Attribute) -> Iterator[nodes.NodeNG]:
    """Values assigned to ``self.<attr>`` anywhere in the enclosing class."""
    klass = enclosing_class(attribute)
    return assigned_self_values(klass, attribute.attrname) if klass is not None else iter(())


def _receiver_label(receiver: nodes.NodeNG) -> str:
    name = dotted(receiver)
    return name if name is not None else "logger"
