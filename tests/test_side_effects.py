"""GM201-GM204 without Dynamo: what is flagged, and the exact text the fixes write.

The real-Dynamo side (break counts before and after, identical output) is in
``tests/test_side_effects_dynamo.py``; the catalog programs under
``rules/GM201``...``rules/GM204`` are shared by both.
"""

from __future__ import annotations

import logging
import textwrap
from pathlib import Path

import pytest

from graphmend_lint import fix_source, lint_source
from graphmend_lint.config import ConfigError, Settings, settings_from_table
from graphmend_lint.diagnostics import Applicability, Position

REPO = Path(__file__).resolve().parents[1]
CATALOG = REPO / "rules"
CODES = ("GM201", "GM202", "GM203", "GM204")

#: Findings of each catalog program, ``(line, code)``; ``fixed_*`` programs must have none.
FINDINGS: dict[str, set[tuple[int, str]]] = {
    "GM201/bad_plain.py": {(7, "GM201")},
    "GM201/bad_conditional.py": {(14, "GM201")},
    "GM201/bad_loop.py": {(15, "GM201")},
    "GM201/bad_returns.py": {(7, "GM201"), (9, "GM201"), (13, "GM201")},
    "GM201/bad_mutated.py": {(7, "GM201")},
    "GM201/bad_helper.py": {(11, "GM201")},
    "GM201/bad_fstring.py": {(7, "GM201"), (7, "GM301")},
    "GM201/bad_module_print.py": {(20, "GM201"), (22, "GM201")},
    "GM202/bad_logger.py": {(18, "GM202")},
    "GM202/bad_warning_once.py": {(18, "GM202"), (24, "GM202")},
    "GM202/bad_warnings_warn.py": {(10, "GM202")},
    "GM202/bad_self_logger.py": {(16, "GM202")},
    "GM202/bad_child_logger.py": {(17, "GM202")},
    "GM202/bad_logging_loop.py": {(11, "GM202")},
    # configuring the logger breaks like logging (GB0291): advice only
    "GM202/bad_logger_config.py": {(22, "GM202")},
    # reached through `module.forward = functools.partial(hook.new_forward, module)`
    "GM202/bad_hooked_forward.py": {(22, "GM202")},
    "GM203/bad_stdout_write.py": {(9, "GM203"), (10, "GM203")},
    "GM203/bad_open.py": {(9, "GM203"), (10, "GM203")},
    "GM203/bad_tqdm_sampling_loop.py": {(11, "GM203")},
    "GM204/bad_perf_counter.py": {(9, "GM204"), (11, "GM204")},
    "GM204/bad_random.py": {(9, "GM204")},
    "GM204/bad_random_draw_arithmetic.py": {(17, "GM204")},
    "GM204/bad_random_draw_uses.py": {(16, "GM204"), (18, "GM204")},
    "GM204/bad_datetime.py": {(9, "GM204")},
    "GM204/bad_numpy_random.py": {(8, "GM204"), (9, "GM204")},
    "GM204/bad_manual_seed.py": {(13, "GM204")},
    "GM204/bad_spec_augment_plan.py": {(16, "GM204"), (23, "GM204")},
    "GM204/bad_quiet_meshgrid.py": {(16, "GM204")},
    "GM204/bad_beam_heap.py": {(20, "GM204")},
    "GM204/bad_numpy_generator_policy.py": {(19, "GM204"), (20, "GM204")},
}


def programs(prefix: str) -> list[Path]:
    return sorted(path for code in CODES for path in (CATALOG / code).glob(f"{prefix}_*.py"))


def relative(path: Path) -> str:
    return path.relative_to(CATALOG).as_posix()


def src(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


def codes(source: str, settings: Settings | None = None) -> list[tuple[int, str]]:
    return [(d.start.line, d.code) for d in lint_source(source, config=settings)]


def fixed(source: str, settings: Settings | None = None) -> str:
    return fix_source(source, config=settings, unsafe=True).source


# -- the catalog ------------------------------------------------------------------------


def test_every_catalog_program_has_expectations() -> None:
    assert {relative(p) for p in programs("bad")} == set(FINDINGS)


@pytest.mark.parametrize("path", programs("bad"), ids=relative)
def test_bad_program_findings(path: Path) -> None:
    found = {(line, code) for line, code in codes(path.read_text(), None)}
    assert found == FINDINGS[relative(path)]


@pytest.mark.parametrize("path", programs("fixed"), ids=relative)
def test_fixed_program_has_no_side_effect_findings(path: Path) -> None:
    """``tests/test_catalog.py`` checks it is the fixer's output, ``tests/test_catalog_dynamo.py`` that Dynamo agrees."""
    assert not [c for _, c in codes(path.read_text()) if c in CODES]


def test_display_only_programs_have_no_fixed_twin() -> None:
    for bad in programs("bad"):
        twin = bad.with_name(bad.name.replace("bad_", "fixed_", 1))
        changes = fix_source(bad.read_text(), str(bad), unsafe=True).source != bad.read_text()
        assert twin.exists() == changes, bad


# -- logger recognition -----------------------------------------------------------------


LOGGER_CALLS = {
    "module logger": "log = logging.getLogger(__name__)\n\n@torch.compile\ndef f(x):\n    log.warning('w')\n    return x * 2\n",
    "factory call": "@torch.compile\ndef f(x):\n    logging.getLogger('a').error('e')\n    return x * 2\n",
    "alias": "base = logging.getLogger('a')\nalias = base\n\n@torch.compile\ndef f(x):\n    alias.critical('c')\n    return x * 2\n",
    "annotated parameter": "@torch.compile\ndef f(x, sink: logging.Logger):\n    sink.info('i')\n    return x * 2\n",
    "configured name": "@torch.compile\ndef f(x):\n    LOGGER.debug('d')\n    return x * 2\n",
    "hf factory": "from transformers.utils import logging as hf\n\nreport = hf.get_logger(__name__)\n\n"
    "@torch.compile\ndef f(x):\n    report.info_once('i')\n    return x * 2\n",
    "logging.log": "@torch.compile\ndef f(x):\n    logging.log(logging.INFO, 'x')\n    return x * 2\n",
    "warnings.warn": "import warnings\n\n@torch.compile\ndef f(x):\n    warnings.warn('w')\n    return x * 2\n",
}
NOT_LOGGER_CALLS = {
    "parameter": "@torch.compile\ndef f(x, tracker):\n    tracker.info('i')\n    return x * 2\n",
    "local object": "class Meter:\n    def info(self, m):\n        pass\n\nmeter = Meter()\n\n"
    "@torch.compile\ndef f(x):\n    meter.info('m')\n    return x * 2\n",
    "self attribute": "class M(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n"
    "        self.stats = {}\n\n    def forward(self, x):\n        self.stats.update(a=1)\n"
    "        self.stats.warning = None\n        return x * 2\n\nm = torch.compile(M())\n",
    "torch.log": "@torch.compile\ndef f(x):\n    y = torch.log(x)\n    return y * 2\n",
    "math.log": "import math\n\n@torch.compile\ndef f(x):\n    return x * math.log(2.0)\n",
}
HEADER = "import logging\nimport torch\n\n"


@pytest.mark.parametrize("body", LOGGER_CALLS.values(), ids=LOGGER_CALLS.keys())
def test_logger_calls_are_flagged(body: str) -> None:
    assert "GM202" in [c for _, c in codes(HEADER + body)]


@pytest.mark.parametrize("body", NOT_LOGGER_CALLS.values(), ids=NOT_LOGGER_CALLS.keys())
def test_other_info_methods_are_not_logger_calls(body: str) -> None:
    assert "GM202" not in [c for _, c in codes(HEADER + body)]


def test_logger_options_from_toml_lists(tmp_path: Path) -> None:
    source = HEADER + src(
        """
        from mylib import make_logger

        events = make_logger("e")

        @torch.compile
        def f(x, audit):
            events.info("factory")
            audit.info("name")
            return x * 2
        """
    )
    assert [c for _, c in codes(source) if c == "GM202"] == []
    table = {"rules": {"GM202": {"logger-names": ["audit"], "logger-factories": ["mylib.make_logger"]}}}
    settings = settings_from_table(table, tmp_path / "pyproject.toml")
    assert settings.options_for("GM202") == {"logger-names": ("audit",), "logger-factories": ("mylib.make_logger",)}
    assert [line for line, c in codes(source, settings) if c == "GM202"] == [10, 11]


def test_logger_option_of_the_wrong_type_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="logger-names: expected a list of strings, got"):
        settings_from_table({"rules": {"GM202": {"logger-names": "log"}}}, tmp_path / "pyproject.toml")


# -- GM204: host RNG ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "flagged"),
    [
        ("u = np.random.rand()", True),
        ("u = np.random.uniform(0.0, 1.0)", True),
        ("u = np.random.randint(0, 4)", True),
        ("u = np.random.rand(1).item()", True),
        ("u = np.random.choice(np.arange(5), 2, replace=False)", True),
        ("u = np.random.beta(1.0, 1.0, size=4)", True),
        ("u = np.random.permutation(4)", True),
        ("u = torch.manual_seed(3)", True),
        ("u = torch.cuda.manual_seed_all(3)", True),
        ("u = np.random.rand(2, 3)", False),
        ("u = np.random.uniform(0.0, 1.0, 4)", False),
        ("u = np.random.normal(size=3)", False),
        ("u = np.random.seed(0)", False),
        ("u = torch.seed()", False),
    ],
)
def test_host_rng_calls(line: str, flagged: bool) -> None:
    source = f"import numpy as np\nimport torch\n\n@torch.compile\ndef f(x):\n    {line}\n    return x, u\n"
    assert codes(source) == ([(6, "GM204")] if flagged else [])


# -- GM203 / GM204 detection ------------------------------------------------------------


def test_host_io_fix_kinds() -> None:
    source = src(
        """
        import pdb
        import sys
        import torch

        @torch.compile
        def f(x):
            y = x * 2
            sys.stderr.write("e")
            pdb.set_trace()
            name = input()
            return y + 1, name
        """
    )
    by_line = {d.start.line: d.fix for d in lint_source(source) if d.code == "GM203"}
    assert sorted(by_line) == [8, 9, 10]
    assert by_line[8].applicability is Applicability.UNSAFE and "is_compiling" in by_line[8].edits[0].content
    assert by_line[9].applicability is Applicability.UNSAFE
    assert by_line[10].applicability is Applicability.DISPLAY_ONLY and not by_line[10].edits


def test_stdlib_calls_resolve_through_imports_and_skip_traced_random() -> None:
    source = src(
        """
        import random
        import uuid
        from time import monotonic as clock

        import torch

        @torch.compile
        def f(x):
            a = clock()
            b = random.choice([1, 2])
            c = x * random.randint(1, 3) + x * random.uniform(0, 1) + x * random.randrange(4)
            d = uuid.uuid1()
            return c, a, b, d
        """
    )
    assert codes(source) == [(9, "GM204"), (10, "GM204"), (12, "GM204")]


def test_python_arithmetic_on_traced_draws_is_flagged() -> None:
    # measured (torch 2.13): a Python operator between a traced draw and a plain number or another draw
    # breaks (GB0213); a draw bound at import time is a plain float, and one scaling a tensor stays traced
    source = src(
        """
        import random

        import torch

        SCALE = random.uniform(0, 1)

        @torch.compile
        def f(x, img):
            c = random.randint(1, 3) + random.uniform(0, 1)
            lam = random.uniform(0, 1)
            lam *= 2
            y = -random.randrange(4)
            return x * (1 - SCALE) + img * random.uniform(0.8, 1.2) + x * lam, c, y
        """
    )
    assert codes(source) == [(9, "GM204"), (11, "GM204"), (12, "GM204")]


# -- GM201: the print op --------------------------------------------------------------


def print_fix(body: str, settings: Settings | None = None) -> str:
    """The fixed text of ``f``'s body (``x`` a tensor parameter, ``n: int``, ``items`` unknown)."""
    header = "import torch\n\n@torch.compile\ndef f(x, n: int, items):\n    y = torch.relu(x)\n"
    return fixed(header + textwrap.indent(src(body), "    ") + "    return y\n", settings)[len(header) :]


PRINT_OP = {
    "tensor and constant": ("print('y', y, 3)\n", "torch._higher_order_ops.print('y {!s} 3', y)\n"),
    "separator": ("print(y, n, sep=', ')\n", "torch._higher_order_ops.print('{!s}, {!s}', y, n)\n"),
    "metadata as text": ("print(y.shape, y.dtype)\n", 'torch._higher_order_ops.print("{} {}", str(y.shape), str(y.dtype))\n'),
    "sizes as ints": ("print(y.shape[0], y.size(1), y.dim(), len(y))\n",
                      'torch._higher_order_ops.print("{!s} {!s} {!s} {!s}", y.shape[0], y.size(1), y.dim(), len(y))\n'),
    "f-string fields kept": ('print(f"{n:>4} {y.mean():.3f} {y!r}")\n',
                             'torch._higher_order_ops.print("{:>4} {:.3f} {!r}", n, y.mean(), y)\n'),
    "item of a reduction": ("print(y.sum().item())\n", 'torch._higher_order_ops.print("{}", y.sum())\n'),
    "braces escaped": ('print("{a}", y)\n', 'torch._higher_order_ops.print("{{a}} {!s}", y)\n'),
    "quotes kept": ('print("it\'s", y)\n', 'torch._higher_order_ops.print("it\'s {!s}", y)\n'),
    "no arguments": ("print()\n", 'torch._higher_order_ops.print("")\n'),
}


@pytest.mark.parametrize(("before", "after"), PRINT_OP.values(), ids=PRINT_OP.keys())
def test_print_becomes_the_print_op(before: str, after: str) -> None:
    assert print_fix(before) == "    " + after + "    return y\n"


PRINT_GUARDED = {
    "file": "print(y, file=sys.stderr)\n",
    "end": "print(y, end='')\n",
    "flush": "print(y, flush=True)\n",
    "star args": "print(*items)\n",
    "unknown value": "print('items', items)\n",
    "self attribute": "print(x.grad)\n",
    "item of an unknown tensor": "print(x.item())\n",
    # `%` formats on the host: the op would get a string Dynamo must first build from the tensor (GB0208), and
    # the print op then breaks too (GB0059, measured): one break more than before the fix
    "percent-formatted tensor": "print('loss: %s' % y.sum())\n",
}


@pytest.mark.parametrize("before", PRINT_GUARDED.values(), ids=PRINT_GUARDED.keys())
def test_a_print_the_op_cannot_take_is_guarded_unsafely(before: str) -> None:
    source = "import sys\nimport torch\n\n@torch.compile\ndef f(x, n: int, items):\n    y = x * 2\n    " + before + "    return y\n"
    (diagnostic,) = [d for d in lint_source(source) if d.code == "GM201"]
    assert diagnostic.fix.applicability is Applicability.UNSAFE
    assert "not the print op" in diagnostic.fix.message
    assert fixed(source).count("if not torch.compiler.is_compiling():\n        print(") == 1


def test_an_older_target_torch_and_the_guard_setting_guard_every_print() -> None:
    guarded = "    if not torch.compiler.is_compiling():\n        print(y)\n"
    assert print_fix("print(y)\n", Settings(target_torch="2.9")).startswith(guarded)
    assert print_fix("print(y)\n", Settings(side_effect_fix="guard")).startswith(guarded)
    assert print_fix("print(y)\n", Settings(target_torch="2.10")).startswith("    torch._higher_order_ops.print")


def test_fix_applicability_per_call() -> None:
    source = HEADER + src(
        """
        log = logging.getLogger(__name__)

        @torch.compile
        def f(x, items):
            y = x.relu()
            print(y)
            log.info("i")
            print(items)
            return y
        """
    )
    found = {d.start.line: d.fix.applicability for d in lint_source(source)}
    assert found == {9: Applicability.SAFE, 10: Applicability.SAFE, 11: Applicability.UNSAFE}
    safe_only = fix_source(source).source
    assert "torch._higher_order_ops.print" in safe_only and "log.info" in safe_only and "print(items)" in safe_only
    assert "if not torch.compiler.is_compiling():\n        log.info" in safe_only


# -- the guard --------------------------------------------------------------------------


def test_neighbouring_statements_of_one_kind_share_one_guard() -> None:
    source = HEADER + src(
        """
        log = logging.getLogger(__name__)

        @torch.compile
        def f(x, items):
            log.info("a")
            # why
            log.debug("b %s", x.shape)  # trailing
            y = x * 2
            log.warning("c")
            print(items)
            return y
        """
    )
    assert fixed(source) == HEADER + src(
        """
        log = logging.getLogger(__name__)

        @torch.compile
        def f(x, items):
            if not torch.compiler.is_compiling():
                log.info("a")
                # why
                log.debug("b %s", x.shape)  # trailing
            y = x * 2
            if not torch.compiler.is_compiling():
                log.warning("c")
            if not torch.compiler.is_compiling():
                print(items)
            return y
        """
    )


def test_a_call_at_the_end_of_the_function_is_still_flagged() -> None:
    """Dynamo logs a break there too, and fullgraph=True fails (tests/test_catalog_dynamo.py measures it)."""
    source = HEADER + "@torch.compile\ndef f(x):\n    y = x * 2\n    logging.info('done')\n    return y\n"
    assert codes(source) == [(7, "GM202")]


def test_guarded_code_is_not_flagged_and_a_second_fix_changes_nothing() -> None:
    source = HEADER + "log = logging.getLogger('a')\n\n@torch.compile\ndef f(x):\n    log.info('a')\n    print(x + 1)\n    return x\n"
    once = fixed(source)
    assert codes(once) == []
    assert fixed(once) == once


def test_noqa_and_selection_keep_statements_out_of_a_shared_guard() -> None:
    source = HEADER + src(
        """
        @torch.compile
        def f(x):
            logging.info("kept")  # noqa: GM202
            logging.info("moved")
            return x + 1
        """
    )
    assert fixed(source) == HEADER + src(
        """
        @torch.compile
        def f(x):
            logging.info("kept")  # noqa: GM202
            if not torch.compiler.is_compiling():
                logging.info("moved")
            return x + 1
        """
    )
    mixed = HEADER + "@torch.compile\ndef f(x):\n    logging.info('a')\n    breakpoint()\n    return x\n"
    only_gm202 = fix_source(mixed, config=Settings(select=("GM202",)), unsafe=True).source
    assert "if not torch.compiler.is_compiling():\n        logging.info('a')\n    breakpoint()\n" in only_gm202


def test_guard_keeps_implicitly_concatenated_strings_and_inlines_triple_quoted() -> None:
    concatenated = HEADER + src(
        """
        @torch.compile(fullgraph=True)
        def f(x):
            logging.warning(
                "a "
                "b"
            )
            return x * 2
        """
    )
    assert "if not torch.compiler.is_compiling():\n        logging.warning(\n            \"a \"\n" in fixed(concatenated)
    triple = concatenated.replace('"a "\n        "b"', '"""a\nb"""')
    assert "    if not torch.compiler.is_compiling(): logging.warning(\n        \"\"\"a\nb\"\"\"\n    )\n" in fixed(triple)


# -- naming torch -----------------------------------------------------------------------


def test_the_fix_imports_torch_where_nothing_binds_it() -> None:
    source = '"""Doc."""\nfrom __future__ import annotations\n\nimport logging\nfrom torch import compile\n\n\n@compile\ndef f(x):\n    logging.info("a")\n    return x * 2\n'
    result = fixed(source)
    assert result.startswith('"""Doc."""\nfrom __future__ import annotations\n\nimport logging\nfrom torch import compile\nimport torch\n')
    assert "    if not torch.compiler.is_compiling():\n" in result
    compile(result, "fixed.py", "exec")


def test_the_fix_uses_an_alias_and_ignores_imports_in_other_functions() -> None:
    aliased = "import logging\nimport torch as T\n\n@T.compile\ndef f(x):\n    logging.info('a')\n    return x * 2\n"
    assert "    if not T.compiler.is_compiling():\n" in fixed(aliased)
    elsewhere = src(
        """
        import logging
        from torch import compile

        def helper():
            import torch
            return torch

        @compile
        def f(x):
            logging.info("a")
            return x * 2
        """
    )
    assert fixed(elsewhere).startswith("import logging\nfrom torch import compile\nimport torch\n")
    local = elsewhere.replace('        logging.info("a")', '        import torch\n        logging.info("a")').replace(
        '    logging.info("a")', '    import torch\n    logging.info("a")'
    )
    assert "import torch\n\ndef helper" not in fixed(local)


def test_no_fix_in_a_module_where_torch_is_optional() -> None:
    """transformers' import_utils.py: torch imported only for type checkers and inside functions.

    Neither binds ``torch`` where the guard runs, and a top-level ``import torch``
    would make torch a hard dependency of a module that checks whether it is installed.
    """
    source = src(
        """
        import logging
        from typing import TYPE_CHECKING

        if TYPE_CHECKING:
            import torch

        logger = logging.getLogger(__name__)

        def torch_version():
            import torch
            return torch.__version__

        def package_available(name):
            logger.debug(f"Detected {name}")
            return True
        """
    )
    everywhere = Settings(scope="all")
    (diagnostic,) = lint_source(source, config=everywhere)
    assert diagnostic.code == "GM202" and diagnostic.fix is None, diagnostic.fix
    with_runtime_import = source.replace("from typing import TYPE_CHECKING\n", "from typing import TYPE_CHECKING\nfrom torch import nn\n")
    assert "import torch\n" in fixed(with_runtime_import, everywhere)  # torch is a dependency already: import it


def test_no_fix_when_torch_means_something_else() -> None:
    source = "import logging\nfrom torch import compile\n\ntorch = None\n\n@compile\ndef f(x):\n    logging.info('a')\n    return x\n"
    (diagnostic,) = lint_source(source)
    assert diagnostic.fix is None


#: pytorch_sac's training logger: a class of the file with a ``log`` method, passed in as ``logger``.
OWN_LOGGER = (
    "import logging\nimport torch\n\n\nclass Logger:\n    def __init__(self):\n        self.meters = {}\n\n"
    "    def log(self, key, value, step):\n        self.meters[key] = value\n\n\n"
    "def f(x, logger, step):\n    loss = (x * 2).mean()\n    logger.log(logging.INFO, 'loss', step)\n    return loss\n"
)


@pytest.mark.dynamo
@pytest.mark.parametrize(("which", "breaks"), [("own", False), ("stdlib", True)])
def test_a_logger_name_on_the_files_own_class_is_no_logger_call(which: str, breaks: bool, tmp_path: Path) -> None:
    """``logger.log(...)`` on the file's own ``Logger`` is traced (no break, no GM202); the same call on a
    ``logging.Logger`` breaks, and the name still makes it GM202's where no class of the file has ``log``."""
    torch = pytest.importorskip("torch")
    from graphmend_lint.verify.breaks import capture_breaks

    source = OWN_LOGGER if which == "own" else OWN_LOGGER.replace("def log(self", "def record(self")
    assert bool([d for d in lint_source(source + "\n\nf = torch.compile(f)\n") if d.code == "GM202"]) is breaks
    path = tmp_path / "program.py"
    path.write_text(source)
    namespace: dict[str, object] = {}
    exec(compile(source, str(path), "exec"), namespace)
    logger = namespace["Logger"]() if which == "own" else logging.getLogger("graphmend-test")
    report = capture_breaks(namespace["f"], torch.ones(3), logger, 1)
    assert bool(report.lines_in(str(path))) is breaks
