"""Stub ``torch`` modules for astroid, written from the generated facts table.

Why: astroid infers through an import by parsing the imported module. Real
torch is thousands of files whose core is C++ behind ``.pyi`` stubs, so
inference would be slow and would still stop at ``torch.randn``. Instead the
modules in :data:`STUB_MODULES` are written as small Python sources from
``torch_facts.json`` and put in astroid's module cache before any linted code
is inferred: ``torch.randn(3)`` then infers to an instance of the stub
``torch.Tensor``, and so do ``F.relu(x)``, ``x.sum()`` and
``nn.Linear(3, 4)(x)``. Nothing imports or parses the installed torch.

How a kind becomes a return value:

* ``tensor``: ``Tensor()``; ``tuple_tensor``: ``_TensorTuple()``, whose
  items, unpacked names and named fields (``.values``) are tensors.
* ``bool``/``int``/``float``: an instance of the builtin type with no known
  value (``int.__new__(int)``), so nothing constant-folds a runtime value;
  ``number`` is int, float, bool or complex.
* ``size``/``dtype``/``device``: instances of the stub classes; ``none``: ``None``.
* ``other``: ``Uninferable``, via the deliberately unbound name
  ``_UNMODELLED`` (astroid turns a failed inference into ``Uninferable``).
* ``mixed:...``: one ``return`` per member kind under ``if _UNMODELLED:``;
  astroid infers every ``return`` of a function, so the call infers to each.

Calling a module goes through ``Module.__call__`` to the class's
``forward``, so ``nn.MultiheadAttention(...)(q, k, v)`` is a tuple of tensors
and a user ``nn.Module`` infers through its own ``forward``. ``Module`` has a
``__getattr__`` (as torch's does) so that parameters and buffers registered
at runtime infer to ``Uninferable`` instead of failing; one consequence of
astroid 4's handling of ``obj.attr(...)`` on a callable instance is that
``self.fc(x)`` infers to ``Uninferable`` *and* ``Tensor``.

Limitation: torch submodules not in :data:`STUB_MODULES` (``torch.cuda``,
``torch.utils.checkpoint``...) are still found on disk by astroid if code
imports them.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping

import astroid
from astroid import nodes
from astroid.builder import AstroidBuilder
from astroid.manager import AstroidManager

from graphmend_lint.analysis.torch_facts import TorchFacts, load_facts, split_kind

#: The stubbed modules, in build order (a stub's star import needs its source cached).
STUB_MODULES = ("torch", "torch.nn", "torch.nn.functional", "torch.nn.modules", "torch._dynamo", "torch.compiler")
_PACKAGES = frozenset({"torch", "torch.nn", "torch.nn.modules", "torch._dynamo", "torch.compiler"})
#: Not a real directory: a module whose file is under it is one of our stubs.
_STUB_ROOT = os.path.join(os.sep, "graphmend-torch-stubs")

_INT = "_builtins.int.__new__(_builtins.int)"
_FLOAT = "_builtins.float.__new__(_builtins.float)"
_BOOL = "_builtins.bool.__new__(_builtins.bool)"
_COMPLEX = "_builtins.complex.__new__(_builtins.complex)"
_STR = "_builtins.str.__new__(_builtins.str)"
_UNMODELLED = "_UNMODELLED"
_RESULTS: dict[str, tuple[str, ...]] = {
    "tensor": ("Tensor()",),
    "tuple_tensor": ("_TensorTuple()",),
    "bool": (_BOOL,),
    "int": (_INT,),
    "float": (_FLOAT,),
    "number": (_INT, _FLOAT, _BOOL, _COMPLEX),
    "size": ("Size()",),
    "dtype": ("dtype()",),
    "device": ("device()",),
    "none": ("None",),
    "other": (_UNMODELLED,),
}
#: Tensor members the stub must not define from the table: they change how
#: astroid builds, instantiates or looks up the class, or are written by hand.
_TENSOR_SKIP = frozenset(
    {
        "__new__", "__init__", "__init_subclass__", "__class_getitem__", "__iter__",
        "__getattr__", "__getattribute__", "__setattr__", "__delattr__",
        "__get__", "__set__", "__delete__", "__set_name__",
    }
)  # fmt: skip
#: astroid checks the arity of the item dunders before calling them.
_METHOD_PARAMETERS = {"__getitem__": "self, index", "__setitem__": "self, index, value", "__delitem__": "self, index"}
_LEGACY_TENSOR_TYPES = (
    "FloatTensor", "DoubleTensor", "HalfTensor", "BFloat16Tensor", "ByteTensor",
    "CharTensor", "ShortTensor", "IntTensor", "LongTensor", "BoolTensor",
)  # fmt: skip

_TORCH_PRELUDE = f'''"""graphmend stub of torch from torch_facts.json; _UNMODELLED is unbound on purpose."""
import builtins as _builtins


class Size(_builtins.tuple):
    def __getitem__(self, index):
        return {_INT}

    def numel(self):
        return {_INT}


class dtype:
    is_floating_point = {_BOOL}
    is_complex = {_BOOL}
    is_signed = {_BOOL}
    itemsize = {_INT}


class device:
    type = {_STR}
    index = {_INT}

    def __init__(self, *args, **kwargs):
        pass


class no_grad:
    def __init__(self, *args, **kwargs):
        pass

    def __enter__(self):
        return None

    def __exit__(self, *args):
        return None

    def __call__(self, function):
        return function


class enable_grad(no_grad):
    pass


class inference_mode(no_grad):
    pass


class set_grad_enabled(no_grad):
    pass


class autocast(no_grad):
    pass
'''

_NN_PRELUDE = f'''"""graphmend stub of torch.nn from torch_facts.json; _UNMODELLED is unbound on purpose."""
import builtins as _builtins
from torch import Tensor, _TensorTuple


class Parameter(Tensor):
    def __init__(self, data=None, requires_grad=True):
        pass


class Buffer(Tensor):
    def __init__(self, data=None, persistent=True):
        pass


class Module:
    training = {_BOOL}

    def __init__(self, *args, **kwargs):
        pass

    def __call__(self, *args, **kwargs):
        return self.forward(*args, **kwargs)

    def __getattr__(self, name):
        return _UNMODELLED

    def forward(self, *args, **kwargs):
        return Tensor()

    def register_buffer(self, name, tensor, persistent=True):
        return None

    def register_parameter(self, name, param):
        return None

    def add_module(self, name, module):
        return None

    def register_module(self, name, module):
        return None

    def get_submodule(self, target):
        return Module()

    def get_parameter(self, target):
        return Parameter()

    def get_buffer(self, target):
        return Tensor()

    def parameters(self, recurse=True):
        yield Parameter()

    def named_parameters(self, *args, **kwargs):
        yield ({_STR}, Parameter())

    def buffers(self, recurse=True):
        yield Tensor()

    def named_buffers(self, *args, **kwargs):
        yield ({_STR}, Tensor())

    def children(self):
        yield Module()

    def named_children(self):
        yield ({_STR}, Module())

    def modules(self):
        yield Module()

    def named_modules(self, *args, **kwargs):
        yield ({_STR}, Module())

    def state_dict(self, *args, **kwargs):
        return {{}}

    def load_state_dict(self, *args, **kwargs):
        return _UNMODELLED

    def train(self, mode=True):
        return self

    def eval(self):
        return self

    def requires_grad_(self, requires_grad=True):
        return self

    def to(self, *args, **kwargs):
        return self

    def cuda(self, device=None):
        return self

    def cpu(self):
        return self

    def half(self):
        return self

    def float(self):
        return self

    def double(self):
        return self

    def bfloat16(self):
        return self

    def type(self, dst_type):
        return self

    def apply(self, fn):
        return self

    def zero_grad(self, set_to_none=True):
        return None

    def extra_repr(self):
        return {_STR}


class _Container(Module):
    # stub-only base: what every container of modules or parameters has
    def __len__(self):
        return {_INT}


class _ModuleContainer(_Container):
    # stub-only base: what iterating, indexing and growing a container of modules gives
    def __getitem__(self, index):
        return Module()

    def __iter__(self):
        yield Module()

    def append(self, module):
        return self


class _KeyedContainer(_Container):
    # stub-only base: a dict-like container iterates over its string keys
    def __iter__(self):
        yield {_STR}


class Sequential(_ModuleContainer):
    def forward(self, input):
        return Tensor()


class ModuleList(_ModuleContainer):
    def extend(self, modules):
        return self

    def insert(self, index, module):
        return None


class ModuleDict(_KeyedContainer):
    def __getitem__(self, key):
        return Module()

    def keys(self):
        yield {_STR}

    def values(self):
        yield Module()

    def items(self):
        yield ({_STR}, Module())


class ParameterList(_Container):
    def __getitem__(self, index):
        return Parameter()

    def __iter__(self):
        yield Parameter()


class ParameterDict(_KeyedContainer):
    def __getitem__(self, key):
        return Parameter()
'''

_SUBMODULE_PRELUDE = '''"""graphmend stub of {name} from torch_facts.json; _UNMODELLED is unbound on purpose."""
import builtins as _builtins
from torch import Size, Tensor, _TensorTuple, device, dtype
'''
_NN_MODULES_SOURCE = '"""graphmend stub of torch.nn.modules: the layers live in torch.nn."""\nfrom torch.nn import *\n'
#: Names each prelude binds: generated code must not rebind them.
_TORCH_RESERVED = frozenset(
    {"Tensor", "Size", "dtype", "device", "no_grad", "enable_grad", "inference_mode", "set_grad_enabled", "autocast"}
    | set(_LEGACY_TENSOR_TYPES)
)
_NN_RESERVED = frozenset(
    {"Tensor", "Parameter", "Buffer", "Module", "Sequential", "ModuleList", "ModuleDict", "ParameterList",
     "ParameterDict"}
)  # fmt: skip
_SUBMODULE_RESERVED = frozenset({"Tensor", "Size", "dtype", "device"})


def _returns(kind: str, indent: str) -> list[str]:
    """Body lines returning one value per kind in ``kind``."""
    values = [value for member in sorted(split_kind(kind)) for value in _RESULTS.get(member, (_UNMODELLED,))]
    lines: list[str] = []
    for value in values[:-1]:
        lines += [f"{indent}if {_UNMODELLED}:", f"{indent}    return {value}"]
    return [*lines, f"{indent}return {values[-1]}"]


def _value(kind: str) -> str:
    """An expression for a module constant of ``kind`` (``Uninferable`` unless it is one value)."""
    values = _RESULTS.get(kind, (_UNMODELLED,))
    return values[0] if len(values) == 1 else _UNMODELLED


def _def(name: str, parameters: str, kind: str, indent: str = "", decorator: str = "") -> list[str]:
    """A ``def`` (a method when *indent* is set) returning one value per member of *kind*, after a blank line."""
    head = [f"{indent}{decorator}"] if decorator else []
    return ["", *head, f"{indent}def {name}({parameters}):", *_returns(kind, indent + "    ")]


def _class(header: str, *body: str) -> list[str]:
    """A top-level class, two blank lines before it."""
    return ["", "", header, *body]


def _functions(functions: Mapping[str, str], module: str, reserved: frozenset[str]) -> list[str]:
    """``def name(*args, **kwargs)`` for every table function directly in ``module``."""
    lines: list[str] = []
    for qualname, kind in sorted(functions.items()):
        owner, _, name = qualname.rpartition(".")
        if owner == module and name not in reserved:
            lines += ["", *_def(name, "*args, **kwargs", kind)]
    return lines


def _tensor_class(facts: TorchFacts) -> list[str]:
    """``torch.Tensor``: table methods and properties, plus a hand-written ``__iter__`` (rows are tensors)."""
    lines = _class(
        "class Tensor:",
        "    def __init__(self, *args, **kwargs):",
        "        pass",
        "",
        "    def __iter__(self):",
        "        yield Tensor()",
    )
    for name, kind in sorted(facts.tensor_methods.items()):
        if name not in _TENSOR_SKIP:
            lines += _def(name, _METHOD_PARAMETERS.get(name, "self, *args, **kwargs"), kind, "    ")
    for name, kind in sorted(facts.tensor_attributes.items()):
        if name not in _TENSOR_SKIP:
            lines += _def(name, "self", kind, "    ", "@property")
    return lines


def _tensor_tuple_class(facts: TorchFacts) -> list[str]:
    """A tuple of tensors of unknown length, with the named-tuple fields of ``torch.return_types``."""
    lines = _class(
        "class _TensorTuple(_builtins.tuple):",
        "    def __getitem__(self, index):",
        "        return Tensor()",
        "",
        "    def __iter__(self):",
        "        yield Tensor()",
    )
    for name, kind in sorted(facts.named_tuple_fields.items()):
        lines += _def(name, "self", kind, "    ", "@property")
    return lines


def _torch_source(facts: TorchFacts) -> str:
    """``torch``: the tensor classes, every ``torch.*`` function, then typed constants (``float32 = dtype()``)."""
    lines = [_TORCH_PRELUDE, *_tensor_class(facts), *_tensor_tuple_class(facts)]
    lines += [line for name in _LEGACY_TENSOR_TYPES for line in _class(f"class {name}(Tensor):", "    pass")]
    lines += _functions(facts.functions, "torch", _TORCH_RESERVED)
    constants = sorted(
        (qualname.rpartition(".")[2], kind)
        for qualname, kind in facts.module_attributes.items()
        if qualname.rpartition(".")[0] == "torch"
    )
    defined = {q.rpartition(".")[2] for q in facts.functions if q.rpartition(".")[0] == "torch"} | _TORCH_RESERVED
    lines += [""] + [f"{name} = {_value(kind)}" for name, kind in constants if name not in defined]
    return "\n".join(lines) + "\n"


def _nn_source(facts: TorchFacts) -> str:
    """``torch.nn``: hand-written ``Module`` and containers, and a class per layer returning its ``forward``'s kind."""
    lines = [_NN_PRELUDE]
    for name, kind in sorted(facts.nn_modules.items()):
        if name not in _NN_RESERVED:
            lines += _class(f"class {name}(Module):", *_def("forward", "self, *args, **kwargs", kind, "    ")[1:])
    return "\n".join(lines) + "\n"


def _submodule_source(facts: TorchFacts, module: str) -> str:
    """A module that is only functions (``torch.nn.functional``, ``torch._dynamo``, ``torch.compiler``)."""
    lines = [_SUBMODULE_PRELUDE.format(name=module), *_functions(facts.functions, module, _SUBMODULE_RESERVED)]
    return "\n".join(lines) + "\n"


@functools.cache
def stub_sources() -> Mapping[str, str]:
    """Module name -> stub source, in :data:`STUB_MODULES` order."""
    facts = load_facts()
    sources = {
        "torch": _torch_source(facts),
        "torch.nn": _nn_source(facts),
        "torch.nn.functional": _submodule_source(facts, "torch.nn.functional"),
        "torch.nn.modules": _NN_MODULES_SOURCE,
        "torch._dynamo": _submodule_source(facts, "torch._dynamo"),
        "torch.compiler": _submodule_source(facts, "torch.compiler"),
    }
    return {name: sources[name] for name in STUB_MODULES}


def _stub_path(module: str) -> str:
    """A fake file name; ``__init__.py`` makes astroid treat the stub as a package (``torch.nn`` is an attribute)."""
    parts = module.split(".")
    if module in _PACKAGES:
        return os.path.join(_STUB_ROOT, *parts, "__init__.py")
    return os.path.join(_STUB_ROOT, *parts) + ".py"


def _is_stub(module: nodes.Module | None) -> bool:
    """Whether the cached module is ours (and not, say, a real torch someone parsed earlier)."""
    return module is not None and (module.file or "").startswith(_STUB_ROOT)


def preload_torch_stubs(manager: AstroidManager | None = None) -> None:
    """Put the stub modules in astroid's cache, replacing any real torch already there.

    Idempotent and cheap once done: astroid's cache is shared process-wide
    (the manager is a borg), so this only rebuilds after someone clears it.
    """
    manager = manager or astroid.MANAGER
    cache = manager.astroid_cache
    if all(_is_stub(cache.get(name)) for name in STUB_MODULES):
        return
    builder = AstroidBuilder(manager, apply_transforms=False)
    for name, source in stub_sources().items():
        cache[name] = builder.string_build(source, name, _stub_path(name))
