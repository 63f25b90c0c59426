"""What to verify: parse TARGET strings, name their scope modules, build their workloads.

A target names a *factory*: something that, called with no arguments, builds
the callable to compile and the inputs to call it with. Three spellings:

* ``path/to/file.py::factory``: a factory in a file (the file is imported by
  its real dotted module name, so the in-memory fixer can see it);
* ``package.module:factory``: a factory in an importable module;
* ``hf:<model_type>[:<ModelClass>]``: the built-in Hugging Face adapter
  (:mod:`graphmend_lint.verify.hf`).

Parsing runs in the parent (no torch needed); building runs in the arm
subprocess, after the import hook is installed.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from graphmend_lint.analysis.imports import module_name_for
from graphmend_lint.verify.workload import HfOptions, InputSet, TargetError, Workload

__all__ = [
    "HfOptions",
    "InputSet",
    "TargetError",
    "TargetSpec",
    "Workload",
    "build_workload",
    "default_lint_scope",
    "default_scope_modules",
    "entry_qualname",
    "parse_target",
    "resolve_reference",
    "targets_from_strings",
]

TargetKind = Literal["file", "module", "hf"]

HF_PREFIX = "hf:"
#: Shared transformers modules that most models' forward passes run through.
#: Kept short on purpose: every module listed here is linted and fixed in
#: memory by both arms, and ``modeling_utils`` (5000+ lines of loading code)
#: would cost more than it can reveal.
HF_SHARED_SCOPE_MODULES = ("transformers.modeling_rope_utils", "transformers.masking_utils")


@dataclass(frozen=True)
class TargetSpec:
    """One parsed TARGET.

    ``location`` is an absolute file path (``file``), a dotted module name
    (``module``) or a model type (``hf``); ``name`` is the factory, or the
    optional model class for ``hf``.
    """

    text: str
    kind: TargetKind
    location: str
    name: str | None
    hf: HfOptions = field(default_factory=HfOptions)

    @property
    def module_name(self) -> str:
        """The dotted module the factory lives in (file and module targets)."""
        if self.kind == "file":
            return module_name_for(self.location)[0]
        return self.location


def parse_target(text: str, base: Path | None = None) -> TargetSpec:
    """Parse one TARGET string; relative file paths resolve against ``base`` (default: cwd)."""
    text = text.strip()
    if text.startswith(HF_PREFIX):
        model_type, _, model_class = text[len(HF_PREFIX) :].partition(":")
        if not model_type:
            raise TargetError(f"{text!r}: expected hf:<model_type>[:<ModelClass>]")
        return TargetSpec(text, "hf", model_type, model_class or None)
    path, sep, factory = text.rpartition("::")
    if sep:
        if not path or not factory:
            raise TargetError(f"{text!r}: expected path/to/file.py::factory")
        resolved = Path(path) if Path(path).is_absolute() else (base or Path.cwd()) / path
        return TargetSpec(text, "file", str(resolved.resolve()), factory)
    module, sep, factory = text.rpartition(":")
    if sep and module and factory and all(part.isidentifier() for part in module.split(".")):
        return TargetSpec(text, "module", module, factory)
    raise TargetError(
        f"{text!r}: a target is path/to/file.py::factory, package.module:factory or hf:<model_type>[:<ModelClass>]"
    )


def default_scope_modules(target: TargetSpec) -> tuple[str, ...]:
    """Modules fixed in memory when ``--scope-module`` is not given.

    A file or module target: the module holding the factory. ``hf:``: the
    model's package (``transformers.models.<package>``, all its submodules) plus
    :data:`HF_SHARED_SCOPE_MODULES`.
    """
    if target.kind == "hf":
        return (f"transformers.models.{hf_model_package(target.location)}", *HF_SHARED_SCOPE_MODULES)
    return (target.module_name,)


def hf_model_package(model_type: str) -> str:
    """The package under ``transformers.models`` that holds *model_type*'s code.

    Usually the type with ``-`` as ``_``, but not always: ``data2vec-audio``
    lives in ``data2vec``, ``voxtral_realtime_encoder`` in ``voxtral_realtime``.
    transformers' own table answers when it is installed (a fix scoped to a
    package that does not exist fixes nothing, silently).
    """
    try:
        from transformers.models.auto.configuration_auto import model_type_to_module_name
    except ImportError:
        return model_type.replace("-", "_")
    return str(model_type_to_module_name(model_type))


def default_lint_scope(target: TargetSpec, configured: str) -> str:
    """The linter ``scope`` used to fix and lint a target's modules.

    File and module targets keep the configured scope (default ``compiled``):
    verify seeds the target's callable as a compile entry point (see
    :mod:`.static`), so the fixes are exactly those ``graphmend-lint --fix``
    would apply if the code said ``torch.compile(callable)``. ``all`` would
    also rewrite functions the callable never reaches, and, because it does
    not assume unannotated parameters are tensors, find less in the ones it
    does. Hugging Face modeling files are libraries of modules that no
    compile call in them reaches, so ``hf:`` targets use ``modules`` (every
    ``forward`` is an entry point), which leaves their loading helpers alone.
    """
    return "modules" if target.kind == "hf" else configured


# -- building (arm side) -------------------------------------------------------------


def resolve_reference(text: str, base: Path | None = None) -> Any:
    """The object a ``file.py::name`` or ``package.module:name`` reference names.

    Used for factories and for injected transforms alike. Raises
    :class:`TargetError` with a message naming what is missing.
    """
    spec = parse_target(text, base)
    if spec.kind == "hf":
        raise TargetError(f"{text!r}: expected file.py::name or package.module:name")
    return _resolve(spec)


def _resolve(spec: TargetSpec) -> Any:
    """The object a parsed file or module target names."""
    assert spec.name is not None
    module = _import_target_module(spec)
    obj: Any = module
    for part in spec.name.split("."):
        if not hasattr(obj, part):
            raise TargetError(f"{spec.text!r}: {module.__name__} has no attribute {spec.name!r}")
        obj = getattr(obj, part)
    return obj


def _import_target_module(spec: TargetSpec) -> Any:
    """Import the module of a file or module target through the normal import system.

    A file is imported under its real dotted name with its package root on
    ``sys.path`` (not via ``spec_from_file_location``), so that the fixing
    import hook, which matches module names, sees it like any other module.
    """
    if spec.kind == "file":
        path = Path(spec.location)
        if not path.is_file():
            raise TargetError(f"{spec.text!r}: no such file {spec.location}")
        name, is_package = module_name_for(str(path))
        root = path.parent
        for _ in range(name.count(".") + is_package):
            root = root.parent
        if str(root) not in sys.path:
            sys.path.insert(0, str(root))
    else:
        name = spec.location
        if "" not in sys.path and os.getcwd() not in sys.path:
            sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module(name)
    except ModuleNotFoundError as error:
        if error.name is not None and name.startswith(error.name):
            raise TargetError(f"{spec.text!r}: cannot import module {name!r}") from error
        raise
    if spec.kind == "file" and os.path.realpath(getattr(module, "__file__", "") or "") != os.path.realpath(path):
        raise TargetError(
            f"{spec.text!r}: importing {name!r} gave {getattr(module, '__file__', None)}, not {path} "
            "(the file's module name clashes with another module; rename the file)"
        )
    return module


def build_workload(spec: TargetSpec) -> Workload:
    """Call the target's factory (or the HF adapter) and normalise what it returns."""
    if spec.kind == "hf":
        from graphmend_lint.verify.hf import build_hf_workload

        return build_hf_workload(spec.location, spec.name, spec.hf)
    factory = _resolve(spec)
    if not callable(factory):
        raise TargetError(f"{spec.text!r}: {spec.name} is not callable")
    return normalise_factory_result(factory(), spec.text)


def normalise_factory_result(result: Any, where: str = "factory") -> Workload:
    """Accept ``(callable, args)``, ``(callable, args, kwargs)``, ``(callable, [args, ...])`` or the dict form.

    ``args`` may be a tuple or list of positional arguments, or a single
    argument; a *list of tuples* is several input sets (the rule catalog's
    ``make()`` convention). The dict form is ``{"callable", "inputs": [(args, kwargs), ...],
    "atol"?, "rtol"?}``; give several input sets so that every branch runs.
    """
    if isinstance(result, dict):
        unknown = set(result) - {"callable", "inputs", "atol", "rtol"}
        if unknown or "callable" not in result or "inputs" not in result:
            raise TargetError(
                f"{where}: a dict result needs 'callable' and 'inputs' (optional 'atol', 'rtol')"
                + (f"; unknown keys: {', '.join(sorted(unknown))}" if unknown else "")
            )
        inputs = [_input_set(item, where) for item in result["inputs"]]
        workload = Workload(result["callable"], inputs, result.get("atol"), result.get("rtol"))
    elif isinstance(result, tuple) and len(result) == 2 and _is_input_set_list(result[1]):
        # the rule catalog's convention: (callable, [args tuple, ...]), one tuple per input set
        workload = Workload(result[0], [(tuple(args), {}) for args in result[1]])
    elif isinstance(result, tuple) and len(result) in (2, 3):
        kwargs = result[2] if len(result) == 3 else {}
        workload = Workload(result[0], [(_positional(result[1]), dict(kwargs))])
    else:
        raise TargetError(
            f"{where}: must return (callable, args), (callable, args, kwargs) or a dict with 'callable' and 'inputs'"
        )
    if not callable(workload.callable):
        raise TargetError(f"{where}: the returned callable is not callable")
    if not workload.inputs:
        raise TargetError(f"{where}: no input sets")
    return workload


def _is_input_set_list(value: Any) -> bool:
    """A list of argument tuples (not a tuple of arguments, which is one input set)."""
    return isinstance(value, list) and bool(value) and all(isinstance(item, tuple) for item in value)


def _positional(args: Any) -> tuple[Any, ...]:
    return tuple(args) if isinstance(args, (tuple, list)) else (args,)


def _input_set(item: Any, where: str) -> InputSet:
    if not (isinstance(item, (tuple, list)) and len(item) == 2 and isinstance(item[1], dict)):
        raise TargetError(f"{where}: each entry of 'inputs' must be (args, kwargs)")
    return _positional(item[0]), dict(item[1])


def entry_qualname(fn: Any) -> str | None:
    """The dotted name the linter knows the compiled callable by, if it has one.

    A function is itself; an ``nn.Module`` or other callable object is its
    class (the linter resolves a class to its ``forward`` / ``__call__``); a
    bound method is its function. Functions defined inside functions have no
    importable name and give None.
    """
    import inspect

    if inspect.ismethod(fn):
        fn = fn.__func__
    target = fn if inspect.isfunction(fn) or inspect.isclass(fn) else type(fn)
    module, qualname = getattr(target, "__module__", None), getattr(target, "__qualname__", None)
    if not module or not qualname or "<locals>" in qualname:
        return None
    return f"{module}.{qualname}"


def targets_from_strings(texts: Sequence[str], base: Path | None, hf: HfOptions) -> list[TargetSpec]:
    """Parse several targets, attaching the HF options to the ``hf:`` ones."""
    parsed = [parse_target(text, base) for text in texts]
    return [replace(spec, hf=hf) if spec.kind == "hf" else spec for spec in parsed]
