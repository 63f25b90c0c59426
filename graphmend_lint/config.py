"""Settings: one frozen dataclass, a schema, and a loader.

The schema (:data:`OPTIONS`) is the single description of every key: the
loader validates against it, and ``docs/configuration.md`` is generated from
it, so docs and code cannot drift. Precedence: defaults, then the config file,
then command-line flags.
"""

from __future__ import annotations

import difflib
import hashlib
import importlib.metadata
import json
import re
import sys
from collections.abc import Callable, Iterable, Mapping
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


def running_python() -> str:
    """``major.minor`` of the interpreter running the linter: the Python fixed code is assumed to run on."""
    return f"{sys.version_info.major}.{sys.version_info.minor}"


def _major_minor(version: str, fallback: str) -> tuple[int, int]:
    """``(major, minor)`` of *version*, or of *fallback* (always ``major.minor``) when it does not parse."""
    found = _VERSION.match(version)
    major, minor = (found.group(1), found.group(2)) if found else fallback.split(".")
    return int(major), int(minor)


def installed_torch() -> str:
    """``major.minor`` of the torch installed beside the linter, read from its metadata (never imported)."""
    try:
        found = _VERSION.match(importlib.metadata.version("torch"))
    except importlib.metadata.PackageNotFoundError:
        return OLDEST_TORCH
    return f"{found.group(1)}.{found.group(2)}" if found else OLDEST_TORCH


#: Files larger than this (bytes) are skipped with a note: generated code, data dumps.
DEFAULT_MAX_FILE_SIZE = 4 * 1024 * 1024


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
    target_python: str = running_python()
    assume_tensor_parameters: bool = True
    extra_compile_functions: tuple[str, ...] = ()
    rule_options: tuple[tuple[str, tuple[tuple[str, Any], ...]], ...] = ()
    verify_targets: tuple[str, ...] = ()
    max_file_size: int = DEFAULT_MAX_FILE_SIZE
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
        return _major_minor(self.target_torch, OLDEST_TORCH)

    @property
    def target_python_version(self) -> tuple[int, int]:
        return _major_minor(self.target_python, running_python())

    @cached_property
    def fingerprint(self) -> str:
        """A stable hash of everything that can change findings; keys the cache (computed once)."""
        data = asdict(self)
        data.pop("config_path", None)
        data.pop("output_format", None)
        return hashlib.sha256(json.dumps(data, sort_keys=True, default=repr).encode()).hexdigest()[:16]


@dataclass(frozen=True)
class ValueType:
    """What a config value must look like: its name in the docs, and its check and conversion.

    ``convert`` raises ``TypeError`` whose message completes "expected ...".
    """

    kind: str
    convert: Callable[[Any], Any]


@dataclass(frozen=True)
class Option:
    """One documented config key."""

    key: str
    type: ValueType
    help: str

    @property
    def kind(self) -> str:
        return self.type.kind

    @property
    def attribute(self) -> str:
        return self.key.replace("-", "_")

    @property
    def default(self) -> Any:
        return next(f.default for f in fields(Settings) if f.name == self.attribute)


def _string_list(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise TypeError("a list of strings")
    return tuple(value)


def _code_list(value: Any) -> tuple[str, ...]:
    return tuple(code.strip().upper() for code in _string_list(value))


def _boolean(value: Any) -> bool:
    if not isinstance(value, bool):
        raise TypeError("true or false")
    return value


def _byte_count(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise TypeError("a whole number of bytes (0 for no limit)")
    return value


def _choice(choices: tuple[str, ...]) -> ValueType:
    def convert(value: Any) -> str:
        if value not in choices:
            raise TypeError("one of " + ", ".join(repr(c) for c in choices))
        return str(value)

    return ValueType("one of " + ", ".join(choices), convert)


def _version(value: Any) -> str:
    if not isinstance(value, str) or not _VERSION.match(value):
        raise TypeError('a version string such as "2.13"')
    return value


def _per_file_ignores(value: Any) -> tuple[tuple[str, tuple[str, ...]], ...]:
    if not isinstance(value, dict):
        raise TypeError('a table of glob = ["CODE", ...]')
    return tuple((str(glob), _code_list(codes)) for glob, codes in sorted(value.items()))


CODES = ValueType("list of codes or prefixes", _code_list)
PER_FILE_CODES = ValueType("table of glob to codes", _per_file_ignores)
GLOBS = ValueType("list of globs", _string_list)
DOTTED_NAMES = ValueType("list of dotted names", _string_list)
BOOL = ValueType("bool", _boolean)
BYTES = ValueType("whole number of bytes", _byte_count)
VERSION = ValueType("version string", _version)

OPTIONS: tuple[Option, ...] = (
    Option("select", CODES, "Rules to enable; `ALL` enables every rule."),
    Option("extend-select", CODES, "Rules to enable on top of `select`."),
    Option("ignore", CODES, "Rules to disable; wins over `select`."),
    Option("per-file-ignores", PER_FILE_CODES, "Codes to ignore in files whose path (relative to the config "
           "file) matches the glob."),
    Option("exclude", GLOBS, "Files and folders never linted; replaces the defaults."),
    Option("extend-exclude", GLOBS, "Files and folders never linted, on top of `exclude`."),
    Option("force-exclude", BOOL, "Apply `exclude` even to files named explicitly on the command line "
           "(pre-commit passes file names)."),
    Option("unsafe-fixes", BOOL, "Let `--fix` apply fixes that can change behaviour."),
    Option("scope", _choice(SCOPES), "What counts as traced code: `compiled` follows torch.compile entry points "
           "found in the linted files (`torch.compile` in every spelling, `torch.compiler.compile`, "
           "`torch._dynamo.optimize`, `torch._dynamo.explain`, `nn.Module.compile` and `extra-compile-functions`); "
           "`modules` also treats every nn.Module `forward` as an entry point (for "
           "library authors); `all` treats every function as traced."),
    Option("output-format", _choice(OUTPUT_FORMATS), "How findings are printed."),
    Option("side-effect-fix", _choice(SIDE_EFFECT_FIXES), "How GM201 fixes a `print`: `auto` prints from inside "
           "the graph with `torch._higher_order_ops.print` when the target torch has it and every value is a "
           "tensor, number or string, else guards it; `guard` always wraps it in "
           "`if not torch.compiler.is_compiling():` (logging is always guarded)."),
    Option("target-torch", VERSION, "The torch version fixed code must run on (`major.minor`); fixes that need a "
           "newer torch are not offered. Default: the torch installed beside the linter, or " + OLDEST_TORCH
           + " when there is none."),
    Option("target-python", VERSION, "The Python version the linted code runs on (`major.minor`); breaks that "
           "only happen on some Python versions (GM509's `functools.cached_property`, which takes a lock before "
           "3.12) are reported for it. Default: the Python running the linter."),
    Option("assume-tensor-parameters", BOOL, "Treat unannotated parameters of compiled functions and `forward` "
           "methods as tensors. Turn off for fewer, surer findings."),
    Option("extra-compile-functions", DOTTED_NAMES, "Functions that behave like `torch.compile` in your code base "
           "(e.g. `mylib.compile_model`)."),
    Option("max-file-size", BYTES, "Files larger than this are skipped with a note (and counted in the summary) "
           "instead of linted: generated code and data dumps hold no compiled models, and a multi-megabyte file "
           "costs seconds. `0` lints every file whatever its size. The default is 4 MiB; the largest file of "
           "transformers 5.23 (`modeling_utils.py`) is 0.27 MiB."),
)
_OPTIONS_BY_KEY = {option.key: option for option in OPTIONS}
#: Every key a ``[tool.graphmend-lint]`` table may hold: the options and the two sub-tables.
TABLE_KEYS = (*_OPTIONS_BY_KEY, "rules", "verify")


def did_you_mean(word: str, candidates: Iterable[str]) -> str:
    """`` (did you mean `x`?)`` when a candidate is close to *word*, else ``""``.

    Among equally close candidates the one that differs at fewest positions
    wins: `GM2O1` (a letter O) is `GM201`, not `GM521`, which has the same
    characters in the same order but a different digit where the typo is not.
    """
    close = difflib.get_close_matches(word, sorted(set(candidates)), n=8, cutoff=0.6)
    if not close:
        return ""
    score = difflib.SequenceMatcher(None, word, close[0]).ratio()
    tied = [c for c in close if difflib.SequenceMatcher(None, word, c).ratio() == score]
    best = min(tied, key=lambda c: (sum(a != b for a, b in zip(word, c)) + abs(len(word) - len(c)), c))
    return f" (did you mean `{best}`?)"


def describe_type(default: Any) -> str:
    """How a config value of *default*'s type is written, in a user's words (not Python's)."""
    if isinstance(default, bool):
        return "true or false"
    if isinstance(default, int):
        return "a whole number"
    if isinstance(default, float):
        return "a number"
    if isinstance(default, str):
        return "a string"
    if isinstance(default, (tuple, list)):
        return "a list of strings"
    return f"a value like `{default!r}`"


def _fits(value: Any, default: Any) -> bool:
    """Whether a TOML *value* has the type of a rule option's *default* (a list for a tuple)."""
    if isinstance(default, (tuple, list)):
        return isinstance(value, list) and all(isinstance(item, str) for item in value)
    if isinstance(default, float) and not isinstance(default, bool):
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    return type(value) is type(default)


def _rule_options(path: Path, table: Any) -> tuple[tuple[str, tuple[tuple[str, Any], ...]], ...]:
    """Validate ``[tool.graphmend-lint.rules.<CODE>]`` tables against each rule's defaults."""
    from graphmend_lint.rules import all_rules, rule_by_code

    if not isinstance(table, dict):
        raise ConfigError(f"{path}: `rules` must be a table of rule tables")
    result = []
    for name, options in sorted(table.items()):
        rule = rule_by_code(name)
        if rule is None:
            known = [r.code for r in all_rules()] + [r.name for r in all_rules()]
            raise ConfigError(f"{path}: rules.{name}: unknown rule{did_you_mean(name, known)}")
        if not isinstance(options, dict):
            raise ConfigError(f"{path}: rules.{name}: expected a table of options")
        for key, value in options.items():
            if key not in rule.options:
                known_keys = ", ".join(f"`{k}`" for k in sorted(rule.options)) or "none"
                raise ConfigError(
                    f"{path}: rules.{name}.{key}: unknown option{did_you_mean(key, rule.options)} "
                    f"({rule.code} takes: {known_keys})"
                )
            default = rule.options[key].default
            if not _fits(value, default):
                raise ConfigError(f"{path}: rules.{name}.{key}: expected {describe_type(default)}, got {value!r}")
        frozen = tuple(sorted((k, tuple(v) if isinstance(v, list) else v) for k, v in options.items()))
        result.append((rule.code, frozen))
    return tuple(result)


def _verify_targets(path: Path, table: Any) -> tuple[str, ...]:
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: verify: expected a table with the single key `targets`")
    for key in sorted(set(table) - {"targets"}):
        raise ConfigError(f"{path}: verify.{key}: unknown key{did_you_mean(key, ['targets'])} (the only key is `targets`)")
    try:
        return _string_list(table.get("targets", []))
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
            dashed = key.replace("_", "-")
            if dashed in _OPTIONS_BY_KEY:
                hint = f" (keys use dashes: `{dashed}`)"
            elif key == "tool":
                hint = f" (only pyproject.toml nests the keys under [tool.{TOOL_TABLE}]; here they are top-level)"
            else:
                hint = did_you_mean(key, TABLE_KEYS)
            raise ConfigError(f"{path}: unknown key `{key}`{hint}")
        try:
            values[option.attribute] = option.type.convert(value)
        except TypeError as exc:
            raise ConfigError(f"{path}: `{key}`: expected {exc}, got {value!r}") from exc
        if option.type in (CODES, PER_FILE_CODES):
            codes = values[option.attribute]
            check_selectors(f"{path}: `{key}`", codes if option.type is CODES else _flat_codes(codes))
    return Settings(**values)


def _flat_codes(per_file: tuple[tuple[str, tuple[str, ...]], ...]) -> list[str]:
    return [code for _, codes in per_file for code in codes]


def known_codes() -> tuple[str, ...]:
    """Every code a selector can name: the registered rules' (GM001, syntax errors, is one)."""
    from graphmend_lint.rules import all_rules

    return tuple(rule.code for rule in all_rules())


def check_selectors(where: str, selectors: Iterable[str]) -> None:
    """Reject a selector that matches no rule: a typo must not turn the linter off silently.

    A selector is ``ALL``, a full code or a code prefix (``GM2``); one that
    matches no registered code raises :class:`ConfigError` naming *where* it
    came from, with the closest code or prefix when there is one.
    """
    codes = known_codes()
    prefixes = {code[:end] for code in codes for end in range(1, len(code) + 1)}
    for selector in selectors:
        if selector != "ALL" and selector not in prefixes:
            hint = did_you_mean(selector, [*codes, *(p for p in prefixes if len(p) == 3), "ALL"])
            raise ConfigError(
                f"{where}: `{selector}` matches no rule{hint}; "
                "use a code (GM201), a prefix (GM2) or ALL, see `graphmend-lint rules`"
            )


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


def cli_codes(values: list[str] | None, flag: str = "") -> tuple[str, ...] | None:
    """Split ``--select A,B --select C`` style values into codes; with *flag*, reject unknown ones."""
    if values is None:
        return None
    codes = tuple(code.strip().upper() for value in values for code in value.split(",") if code.strip())
    if flag:
        check_selectors(flag, codes)
    return codes
