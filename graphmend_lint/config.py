"""Settings: one frozen dataclass, a schema, and a loader.

The schema (:data:`OPTIONS`) is the single description of every key: the
loader validates against it, and ``docs/configuration.md`` is generated from
it, so docs and code cannot drift. Precedence: defaults, then the config file,
then command-line flags.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import re
import sys
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field, fields, replace
from functools import cached_property
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

SCOPES = ("compiled", "modules", "all")
OUTPUT_FORMATS = ("concise", "full", "json", "sarif", "github")
SIDE_EFFECT_FIXES = ("auto", "guard")
#: Assumed when torch is not installed where the linter runs (a pre-commit environment):
#: the oldest torch whose torch.compile the rules describe.
OLDEST_TORCH = "2.4"
_VERSION = re.compile(r"^(\d+)\.(\d+)")
TOOL_TABLE = "graphmend-lint"
DEFAULT_EXCLUDE = (
    ".git",
    ".hg",
    ".svn",
    ".tox",
    ".nox",
    ".venv",
    "venv",
    ".eggs",
    "__pycache__",
    "build",
    "dist",
    "node_modules",
    ".graphmend_cache",
    "site-packages",
)


def installed_torch() -> str:
    """``major.minor`` of the torch installed beside the linter, read from its metadata (never imported)."""
    try:
        found = _VERSION.match(importlib.metadata.version("torch"))
    except importlib.metadata.PackageNotFoundError:
        return OLDEST_TORCH
    return f"{found.group(1)}.{found.group(2)}" if found else OLDEST_TORCH


class ConfigError(ValueError):
    """A config file or flag is invalid. The message names the file and key."""


@dataclass(frozen=True)
class Settings:
    """Everything that changes what the linter reports. Immutable, hashable."""

    select: tuple[str, ...] = ("ALL",)
    extend_select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = ()
    exclude: tuple[str, ...] = DEFAULT_EXCLUDE
    extend_exclude: tuple[str, ...] = ()
    force_exclude: bool = False
    unsafe_fixes: bool = False
    scope: str = "compiled"
    output_format: str = "concise"
    side_effect_fix: str = "auto"
    target_torch: str = installed_torch()
    assume_tensor_parameters: bool = True
    extra_compile_functions: tuple[str, ...] = ()
    rule_options: tuple[tuple[str, tuple[tuple[str, Any], ...]], ...] = ()
    verify_targets: tuple[str, ...] = ()
    #: Directory the config file sits in; relative excludes resolve against it.
    root: str = "."
    config_path: str | None = field(default=None, compare=False)

    def options_for(self, code: str) -> dict[str, Any]:
        """The options table the user set for one rule (code-keyed)."""
        for rule_code, items in self.rule_options:
            if rule_code == code:
                return dict(items)
        return {}

    @property
    def target_torch_version(self) -> tuple[int, int]:
        found = _VERSION.match(self.target_torch)
        major, minor = (found.group(1), found.group(2)) if found else OLDEST_TORCH.split(".")
        return int(major), int(minor)

    @cached_property
    def fingerprint(self) -> str:
        """A stable hash of everything that can change findings; keys the cache (computed once)."""
        data = asdict(self)
        data.pop("config_path", None)
        data.pop("output_format", None)
        return hashlib.sha256(json.dumps(data, sort_keys=True, default=repr).encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Option:
    """One documented config key."""

    key: str
    kind: str
    help: str
    convert: Callable[[str, Any], Any]

    @property
    def attribute(self) -> str:
        return self.key.replace("-", "_")

    @property
    def default(self) -> Any:
        return next(f.default for f in fields(Settings) if f.name == self.attribute)


def _string_list(key: str, value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise TypeError("a list of strings")
    return tuple(value)


def _code_list(key: str, value: Any) -> tuple[str, ...]:
    return tuple(code.strip().upper() for code in _string_list(key, value))


def _boolean(key: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise TypeError("true or false")
    return value


def _choice(choices: tuple[str, ...]) -> Callable[[str, Any], str]:
    def convert(key: str, value: Any) -> str:
        if value not in choices:
            raise TypeError("one of " + ", ".join(repr(c) for c in choices))
        return str(value)

    return convert


def _version(key: str, value: Any) -> str:
    if not isinstance(value, str) or not _VERSION.match(value):
        raise TypeError('a version string such as "2.13"')
    return value


def _per_file_ignores(key: str, value: Any) -> tuple[tuple[str, tuple[str, ...]], ...]:
    if not isinstance(value, dict):
        raise TypeError('a table of glob = ["CODE", ...]')
    return tuple((str(glob), _code_list(key, codes)) for glob, codes in sorted(value.items()))


OPTIONS: tuple[Option, ...] = (
    Option("select", "list of codes or prefixes", "Rules to enable; `ALL` enables every rule.", _code_list),
    Option("extend-select", "list of codes or prefixes", "Rules to enable on top of `select`.", _code_list),
    Option("ignore", "list of codes or prefixes", "Rules to disable; wins over `select`.", _code_list),
    Option(
        "per-file-ignores",
        "table of glob to codes",
        "Codes to ignore in files whose path (relative to the config file) matches the glob.",
        _per_file_ignores,
    ),
    Option("exclude", "list of globs", "Files and folders never linted; replaces the defaults.", _string_list),
    Option("extend-exclude", "list of globs", "Files and folders never linted, on top of `exclude`.", _string_list),
    Option(
        "force-exclude",
        "bool",
        "Apply `exclude` even to files named explicitly on the command line (pre-commit passes file names).",
        _boolean,
    ),
    Option("unsafe-fixes", "bool", "Let `--fix` apply fixes that can change behaviour.", _boolean),
    Option(
        "scope",
        "one of " + ", ".join(SCOPES),
        "What counts as traced code: `compiled` follows torch.compile entry points found in the linted files; "
        "`modules` also treats every nn.Module `forward` as an entry point (for library authors); "
        "`all` treats every function as traced.",
        _choice(SCOPES),
    ),
    Option("output-format", "one of " + ", ".join(OUTPUT_FORMATS), "How findings are printed.", _choice(OUTPUT_FORMATS)),
    Option(
        "side-effect-fix",
        "one of " + ", ".join(SIDE_EFFECT_FIXES),
        "How GM201 fixes a `print`: `auto` prints from inside the graph with `torch._higher_order_ops.print` "
        "when the target torch has it and every value is a tensor, number or string, else guards it; "
        "`guard` always wraps it in `if not torch.compiler.is_compiling():` (logging is always guarded).",
        _choice(SIDE_EFFECT_FIXES),
    ),
    Option(
        "target-torch",
        "version string",
        "The torch version fixed code must run on (`major.minor`); fixes that need a newer torch are not "
        "offered. Default: the torch installed beside the linter, or " + OLDEST_TORCH + " when there is none.",
        _version,
    ),
    Option(
        "assume-tensor-parameters",
        "bool",
        "Treat unannotated parameters of compiled functions and `forward` methods as tensors. "
        "Turn off for fewer, surer findings.",
        _boolean,
    ),
    Option(
        "extra-compile-functions",
        "list of dotted names",
        "Functions that behave like `torch.compile` in your code base (e.g. `mylib.compile_model`).",
        _string_list,
    ),
)
_OPTIONS_BY_KEY = {option.key: option for option in OPTIONS}


def _rule_options(path: Path, table: Any) -> tuple[tuple[str, tuple[tuple[str, Any], ...]], ...]:
    """Validate ``[tool.graphmend-lint.rules.<CODE>]`` tables against each rule's defaults."""
    from graphmend_lint.rules import rule_by_code

    if not isinstance(table, dict):
        raise ConfigError(f"{path}: `rules` must be a table of rule tables")
    result = []
    for name, options in sorted(table.items()):
        rule = rule_by_code(name)
        if rule is None:
            raise ConfigError(f"{path}: rules.{name}: unknown rule")
        if not isinstance(options, dict):
            raise ConfigError(f"{path}: rules.{name}: expected a table of options")
        for key, value in options.items():
            if key not in rule.options:
                known = ", ".join(sorted(rule.options)) or "none"
                raise ConfigError(f"{path}: rules.{name}.{key}: unknown option (known: {known})")
            default = rule.options[key]
            if type(value) is not type(default) and not (isinstance(default, tuple) and isinstance(value, list)):
                raise ConfigError(
                    f"{path}: rules.{name}.{key}: expected {type(default).__name__}, got {type(value).__name__}"
                )
        frozen = tuple(sorted((k, tuple(v) if isinstance(v, list) else v) for k, v in options.items()))
        result.append((rule.code, frozen))
    return tuple(result)


def _verify_targets(path: Path, table: Any) -> tuple[str, ...]:
    if not isinstance(table, dict) or set(table) - {"targets"}:
        raise ConfigError(f"{path}: verify: expected a table with the single key `targets`")
    try:
        return _string_list("verify.targets", table.get("targets", []))
    except TypeError as exc:
        raise ConfigError(f"{path}: verify.targets: expected {exc}") from exc


def settings_from_table(table: Mapping[str, Any], path: Path) -> Settings:
    """Validate one ``[tool.graphmend-lint]`` table and turn it into settings."""
    values: dict[str, Any] = {"root": str(path.parent.resolve()), "config_path": str(path)}
    for key, value in table.items():
        if key == "rules":
            values["rule_options"] = _rule_options(path, value)
            continue
        if key == "verify":
            values["verify_targets"] = _verify_targets(path, value)
            continue
        option = _OPTIONS_BY_KEY.get(key)
        if option is None:
            hint = " (keys use dashes)" if key.replace("_", "-") in _OPTIONS_BY_KEY else ""
            raise ConfigError(f"{path}: unknown key `{key}`{hint}")
        try:
            values[option.attribute] = option.convert(key, value)
        except TypeError as exc:
            raise ConfigError(f"{path}: `{key}`: expected {exc}, got {value!r}") from exc
    return Settings(**values)


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as handle:
            return tomllib.load(handle)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read config: {exc.strerror or exc}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from exc


def load_config_file(path: Path) -> Settings:
    """Load settings from an explicit file (``--config``)."""
    data = _read_toml(path)
    if path.name == "pyproject.toml":
        table = data.get("tool", {}).get(TOOL_TABLE, {})
    else:
        table = data
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: [tool.{TOOL_TABLE}] must be a table")
    return settings_from_table(table, path)


def find_config_file(start: Path) -> Path | None:
    """The nearest ``graphmend-lint.toml``, or ``pyproject.toml`` with our table, above *start*."""
    directory = start.resolve()
    if not directory.is_dir():
        directory = directory.parent
    for candidate_dir in (directory, *directory.parents):
        dedicated = candidate_dir / f"{TOOL_TABLE}.toml"
        if dedicated.is_file():
            return dedicated
        pyproject = candidate_dir / "pyproject.toml"
        if pyproject.is_file() and TOOL_TABLE in _read_toml(pyproject).get("tool", {}):
            return pyproject
    return None


def load_settings(config: Path | None = None, start: Path | None = None) -> Settings:
    """Load settings from *config*, or from the nearest config file above *start*."""
    path = config if config is not None else find_config_file(start or Path.cwd())
    if path is None:
        # Like ruff: without a config file the project is the working directory,
        # which is also where the cache goes (never inside the linted tree).
        return Settings(root=str(Path.cwd().resolve()))
    return load_config_file(path)


def with_overrides(settings: Settings, **overrides: Any) -> Settings:
    """Apply command-line values on top of file settings; ``None`` means unset."""
    return replace(settings, **{key: value for key, value in overrides.items() if value is not None})


def cli_codes(values: list[str] | None) -> tuple[str, ...] | None:
    """Split ``--select A,B --select C`` style values into codes."""
    if values is None:
        return None
    return tuple(code.strip().upper() for value in values for code in value.split(",") if code.strip())
