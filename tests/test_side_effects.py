"""GM201-GM204 without Dynamo: what is flagged, and the exact text the fixes write.

The real-Dynamo side (break counts before and after, identical output) is in
``tests/test_side_effects_dynamo.py``; the catalog programs under
``rules/GM201``...``rules/GM204`` are shared by both.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from graphmend_lint import fix_source, lint_source
from graphmend_lint.config import ConfigError, Settings, settings_from_table
from graphmend_lint.diagnostics import Applicability, Position
from graphmend_lint.fixes.cst_index import CstIndex

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
    "GM202/bad_logger.py": {(18, "GM202")},
    "GM202/bad_warning_once.py": {(18, "GM202"), (24, "GM202")},
    "GM202/bad_warnings_warn.py": {(10, "GM202")},
    "GM202/bad_self_logger.py": {(16, "GM202")},
    "GM202/bad_logging_loop.py": {(11, "GM202")},
    "GM203/bad_stdout_write.py": {(9, "GM203"), (10, "GM203")},
    "GM203/bad_open.py": {(9, "GM203"), (10, "GM203")},
    "GM204/bad_perf_counter.py": {(9, "GM204"), (11, "GM204")},
    "GM204/bad_random.py": {(9, "GM204")},
    "GM204/bad_datetime.py": {(9, "GM204")},
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
    """Its deferred calls sit in the epilogue; ``tests/test_catalog.py`` checks it is the fixer's output."""
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
            c = random.randint(1, 3) + random.uniform(0, 1) + random.randrange(4)
            d = uuid.uuid1()
            return x * c, a, b, d
        """
    )
    assert codes(source) == [(9, "GM204"), (10, "GM204"), (12, "GM204")]


# -- the defer fix ------------------------------------------------------------------------


def test_print_and_logger_calls_defer_together_in_order() -> None:
    source = HEADER + src(
        """
        log = logging.getLogger(__name__)

        @torch.compile
        def f(x):
            y = x * 2
            print("a", y.shape)
            log.info("b %s", y.sum())
            print("c")
            return y.relu()
        """
    )
    diagnostics = lint_source(source)
    assert [d.code for d in diagnostics] == ["GM201", "GM202", "GM201"]
    assert len({d.fix for d in diagnostics}) == 1, "one fix per function, shared by both rules"
    assert fixed(source) == HEADER + src(
        """
        log = logging.getLogger(__name__)

        @torch.compile
        def f(x):
            y = x * 2
            _gm_msg_2 = y.sum()
            _gm_ret = y.relu()
            print("a", y.shape)
            log.info("b %s", _gm_msg_2)
            print("c")
            return _gm_ret
        """
    )


def test_calls_of_one_loop_share_a_tagged_list_and_keep_their_interleaving() -> None:
    source = HEADER + src(
        """
        @torch.compile
        def f(x):
            for i in range(3):
                x = x + 1
                print("it", i)
                if i % 2:
                    logging.warning("odd %s", x.sum())
            return x * 2
        """
    )
    assert fixed(source) == HEADER + src(
        """
        @torch.compile
        def f(x):
            _gm_log_1 = []
            for i in range(3):
                x = x + 1
                _gm_log_1.append((1, i))
                if i % 2:
                    _gm_log_1.append((2, x.sum()))
            _gm_ret = x * 2
            list(map(lambda _gm_args: print("it", _gm_args[1]) if _gm_args[0] == 1 else logging.warning("odd %s", _gm_args[1]), _gm_log_1))
            return _gm_ret
        """
    )


def test_generated_names_do_not_collide_and_a_new_call_extends_the_epilogue() -> None:
    source = HEADER + src(
        """
        @torch.compile
        def f(x):
            _gm_msg_1 = "mine"
            y = x * 2
            _gm_ret = y.relu()
            print(_gm_msg_1)
            print(f"{y.sum()}")
            return _gm_ret
        """
    )
    assert fixed(source) == HEADER + src(
        """
        @torch.compile
        def f(x):
            _gm_msg_1 = "mine"
            y = x * 2
            _gm_ret = y.relu()
            _gm_msg_3 = y.sum()
            print(_gm_msg_1)
            print(f"{_gm_msg_3}")
            return _gm_ret
        """
    )


def test_a_tensor_mutated_through_a_view_is_snapshotted() -> None:
    source = HEADER + src(
        """
        @torch.compile
        def f(x: torch.Tensor):
            y = x + 1
            print(y)
            row = y[0]
            row.zero_()
            return y
        """
    )
    assert fixed(source).endswith("    _gm_msg_1 = y.detach().clone()\n    row = y[0]\n    row.zero_()\n    print(_gm_msg_1)\n    return y\n")
    unknown = source.replace("x: torch.Tensor", "x")  # `y` might not be a tensor: no snapshot possible
    assert "not deferred: `y` (line 7) is modified later" in lint_source(unknown)[0].fix.message


def test_a_rebound_name_is_captured_without_a_copy() -> None:
    source = HEADER + src(
        """
        @torch.compile
        def f(x):
            y = x + 1
            print(y)
            y = y * 2
            return y
        """
    )
    assert "_gm_msg_1 = y\n" in fixed(source)


DECLINED = {
    "value used": ("r = logging.info('x')", "the value of the call on line 7 is used"),
    "starred": ("print(*x.shape)", "passes *args/**kwargs"),
    "exc_info": ("logging.error('x', exc_info=True)", "records the current exception"),
    "mutated list": ("items = [1]\n    print(items)\n    items.append(2)", "`items` (line 8) is modified later"),
}


@pytest.mark.parametrize(("statement", "reason"), DECLINED.values(), ids=DECLINED.keys())
def test_declined_deferral_offers_the_guard_with_the_reason(statement: str, reason: str) -> None:
    source = HEADER + f"@torch.compile\ndef f(x):\n    y = x * 2\n    {statement}\n    print('other')\n    return y + 1\n"
    diagnostics = [d for d in lint_source(source) if d.code in {"GM201", "GM202"}]
    assert diagnostics
    for diagnostic in diagnostics:
        assert diagnostic.fix is None or reason in diagnostic.fix.message
    assert "if not torch.compiler.is_compiling():\n        print('other')" in fixed(source)


def test_a_return_inside_with_declines() -> None:
    source = HEADER + src(
        """
        @torch.compile
        def f(x):
            with torch.no_grad():
                y = x * 2
                print("y")
                return y + 1
        """
    )
    (diagnostic,) = lint_source(source)
    assert "the `return` on line 9 is inside a `with`" in diagnostic.fix.message


def test_a_helper_is_guarded_and_its_caller_deferred() -> None:
    source = HEADER + src(
        """
        def helper(h):
            print("helper", h.shape)
            return h * 2

        @torch.compile
        def f(x):
            y = helper(x) + 1
            print("caller")
            return y.relu()
        """
    )
    messages = {d.start.line: d.fix.message for d in lint_source(source)}
    assert "another traced function calls this one" in messages[5]
    assert messages[11].startswith("Defer")
    assert fixed(source) == HEADER + src(
        """
        def helper(h):
            if not torch.compiler.is_compiling():
                print("helper", h.shape)
            return h * 2

        @torch.compile
        def f(x):
            y = helper(x) + 1
            _gm_ret = y.relu()
            print("caller")
            return _gm_ret
        """
    )


SUBMODULE_MENTIONS = {
    "attribute": "class Outer(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n"
    "        self.inner = Inner()\n\n    def forward(self, x):\n        return self.inner(x) + 1\n",
    "table": "ATTENTION_CLASSES = {'eager': Inner}\n",
}


@pytest.mark.parametrize("mention", SUBMODULE_MENTIONS.values(), ids=SUBMODULE_MENTIONS.keys())
def test_a_forward_whose_class_is_used_as_a_submodule_is_a_helper(mention: str) -> None:
    inner = "class Inner(torch.nn.Module):\n    def forward(self, x):\n        print('inner')\n        return x * 2\n\n"
    modules = Settings(scope="modules")
    (diagnostic,) = lint_source(HEADER + inner + mention, config=modules)
    assert "another traced function calls this one" in diagnostic.fix.message
    (entry,) = lint_source(HEADER + inner + "model = torch.compile(Inner())\n", config=modules)
    assert entry.fix.message.startswith("Defer")


def test_guard_setting_and_fullgraph_use_the_guard() -> None:
    source = HEADER + "@torch.compile\ndef f(x):\n    print(x)\n    return x * 2\n"
    guarded = HEADER + "@torch.compile\ndef f(x):\n    if not torch.compiler.is_compiling():\n        print(x)\n    return x * 2\n"
    assert fixed(source, Settings(side_effect_fix="guard")) == guarded
    full = source.replace("@torch.compile", "@torch.compile(fullgraph=True)")
    assert fixed(full) == guarded.replace("@torch.compile", "@torch.compile(fullgraph=True)")


def test_an_epilogue_call_is_flagged_under_fullgraph_only() -> None:
    source = HEADER + "@torch.compile\ndef f(x):\n    y = x * 2\n    print(y)\n    return y\n"
    assert codes(source) == []
    assert codes(source.replace("@torch.compile", "@torch.compile(fullgraph=True)")) == [(7, "GM201")]


def test_noqa_and_selection_keep_calls_out_of_another_rules_deferral() -> None:
    source = HEADER + src(
        """
        @torch.compile
        def f(x):
            y = x * 2
            print("kept")  # noqa: GM201
            logging.info("moved")
            return y + 1
        """
    )
    result = fixed(source)
    assert '    print("kept")  # noqa: GM201\n    _gm_ret = y + 1\n    logging.info("moved")\n' in result
    ignoring = Settings(ignore=("GM201",))
    assert 'print("kept")  # noqa: GM201\n    _gm_ret' in fixed(source.replace("  # noqa: GM201", "  # noqa: GM201"), ignoring)


def test_comments_and_multiline_strings_survive() -> None:
    source = HEADER + src(
        '''
        class M(torch.nn.Module):
            def forward(self, x):
                """Doc."""
                h = x * 2
                # explain the shape
                print("""shape
        of h""", h.shape)  # trailing
                return h + 1

        m = torch.compile(M())
        '''
    )
    assert fixed(source) == HEADER + src(
        '''
        class M(torch.nn.Module):
            def forward(self, x):
                """Doc."""
                h = x * 2
                _gm_ret = h + 1
                # explain the shape
                print("""shape
        of h""", h.shape)  # trailing
                return _gm_ret

        m = torch.compile(M())
        '''
    )


def test_guard_keeps_implicitly_concatenated_strings_and_refuses_triple_quoted() -> None:
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
    assert fixed(triple) == triple


# -- CstIndex -----------------------------------------------------------------------------


def test_cst_index_maps_character_positions() -> None:
    import libcst as cst

    text = 'def f(x):\n    s = "größe"; print(s, x)\n    return x\n'
    index = CstIndex.parse(text)
    call = index.node_at(Position(2, 17), Position(2, 28), cst.Call)  # characters, not UTF-8 bytes
    assert call is not None and index.code(call) == "print(s, x)"
    assert index.node_at(Position(2, 19), Position(2, 30), cst.Call) is None
    assert index.smallest_around(Position(2, 23), Position(2, 24), cst.Call) is call
    function = index.enclosing_function(Position(3, 4))
    assert function is not None and function.name.value == "f"
