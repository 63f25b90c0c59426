"""Write a deferral :class:`~graphmend_lint.fixes.defer_plan.Plan` into the function with libcst.

libcst keeps comments, quotes and spacing. Statements are replaced and
inserted in the function's libcst node; the new node is printed at the
function's own indentation (checked by printing the old node back to the
exact source text, else the whole module is printed and the function cut out
of it) and becomes one :class:`Edit` over the function, from ``def`` to its
last statement. One edit per function means all its calls move together, and
GM201's and GM202's findings in one function carry the same fix.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import libcst as cst
from astroid import nodes

from graphmend_lint.analysis.side_effects import is_trivial_value
from graphmend_lint.context import FileAnalysis, def_position
from graphmend_lint.diagnostics import Edit, Position
from graphmend_lint.fixes.cst_index import CstIndex
from graphmend_lint.fixes.defer_plan import Decline, Plan, Reach, Site, reach

_GENERATED = re.compile(r"^_gm_[a-z]+(?:_(\d+))?$")


class _Names:
    """Fresh ``_gm_*`` names that the function does not use yet."""

    def __init__(self, function: nodes.FunctionDef) -> None:
        used = {n.name for n in function.nodes_of_class((nodes.Name, nodes.AssignName))}
        numbers = [int(m.group(1)) for name in used if (m := _GENERATED.match(name)) and m.group(1)]
        self.offset = max(numbers, default=0)
        self.used = used

    def numbered(self, stem: str, number: int) -> str:
        return f"_gm_{stem}_{number + self.offset}"

    def single(self, stem: str) -> str:
        name, suffix = f"_gm_{stem}", 1
        while name in self.used:
            suffix += 1
            name = f"_gm_{stem}{suffix}"
        return name


@dataclass
class _SiteCode:
    """The libcst pieces of one site."""

    site: Site
    line: cst.SimpleStatementLine
    replay_call: cst.BaseExpression  # the call with leaves replaced by references
    at_point: list[cst.BaseStatement]


class Rewriter:
    """Turn a :class:`Plan` into one :class:`Edit` replacing the function's text."""

    def __init__(self, analysis: FileAnalysis, function: nodes.FunctionDef, plan: Plan) -> None:
        self.analysis = analysis
        try:
            self.index: CstIndex = analysis.cst_around(function)
        except cst.ParserSyntaxError as error:  # newer syntax than this libcst knows
            raise Decline(f"libcst cannot parse the file ({error.message})") from error
        self.module = self.index.module
        self.function = function
        self.plan = plan
        self.names = _Names(function)
        self.loop_groups = self._loop_groups()

    def edit(self) -> Edit:
        line, byte_col = def_position(self.function)
        start = Position(line, self.analysis.source.char_column(line, byte_col))
        cst_function = self.index.smallest_around(start, start, cst.FunctionDef)
        if cst_function is None:
            raise Decline("the function could not be located for rewriting")
        site_code = [self._site_code(site) for site in self.plan.sites]
        replacements: dict[cst.CSTNode, list[cst.BaseStatement]] = {c.line: c.at_point for c in site_code}
        for ret in self.plan.returns:
            line_node = self._statement_line(ret, "the `return`")
            replacements[line_node] = self._returning(ret, line_node, self._epilogue(site_code, ret))
        new_function = cst_function.visit(_Replace(replacements))
        assert isinstance(new_function, cst.FunctionDef)
        end = self._epilogue(site_code, None) if self.plan.epilogue_at_end else []
        new_function = self._with_prologue_and_end(new_function, end)
        return self._function_edit(cst_function, new_function)

    # -- pieces --------------------------------------------------------------------

    def _loop_groups(self) -> dict[int, list[Site]]:
        """Sites per outermost loop, keyed by the first site's number."""
        groups: dict[int, list[Site]] = {}
        by_loop: dict[nodes.NodeNG, int] = {}
        for site in self.plan.sites:
            if site.loop is None:
                continue
            key = by_loop.setdefault(site.loop, site.number)
            groups.setdefault(key, []).append(site)
        return groups

    def _group_of(self, site: Site) -> tuple[int, list[Site]]:
        return next((key, sites) for key, sites in self.loop_groups.items() if site in sites)

    def _statement_line(self, statement: nodes.NodeNG, what: str) -> cst.SimpleStatementLine:
        start, end = self.analysis.start_of(statement), self.analysis.end_of(statement)
        line = self.index.smallest_around(start, end, cst.SimpleStatementLine)
        if line is None or len(line.body) != 1 or self.index.span(line.body[0]) != (start, end):
            raise Decline(f"{what} on line {statement.lineno} shares its line with other statements")
        return line

    def _site_code(self, site: Site) -> _SiteCode:
        line = self._statement_line(site.statement, "the call")
        call = line.body[0].value  # type: ignore[union-attr]
        references = self._references(site)
        leaves = {}
        captured = []
        for leaf, reference in zip(site.leaves, references):
            node = self.index.node_at(self.analysis.start_of(leaf.node), self.analysis.end_of(leaf.node), cst.BaseExpression)
            if node is None:
                raise Decline(f"an argument on line {leaf.node.lineno} could not be located for rewriting")
            leaves[node] = cst.parse_expression(reference)
            captured.append(self._captured_code(node, leaf.snapshot))
        replay_call = call.visit(_Replace(leaves))
        keep = {"leading_lines": line.leading_lines, "trailing_whitespace": line.trailing_whitespace}
        at_point = [self._statement(text).with_changes(**keep) for text in self._at_point(site, captured)]
        if at_point:
            at_point[1:] = [s.with_changes(leading_lines=()) for s in at_point[1:]]
            at_point[:-1] = [s.with_changes(trailing_whitespace=cst.TrailingWhitespace()) for s in at_point[:-1]]
        return _SiteCode(site, line, replay_call, at_point)

    def _references(self, site: Site) -> list[str]:
        count = len(site.leaves)
        if site.loop is not None:
            tagged = len(self._group_of(site)[1]) > 1
            return [f"_gm_args[{index + tagged}]" for index in range(count)]
        name = self.names.numbered("msg", site.number)
        return [name] if count == 1 else [f"{name}[{index}]" for index in range(count)]

    def _captured_code(self, node: cst.BaseExpression, snapshot: bool) -> str:
        code = self.module.code_for_node(node)
        atom = isinstance(node, (cst.Name, cst.Attribute, cst.Call, cst.Subscript)) and not node.lpar
        if "\n" in code or (snapshot and not atom):
            code = f"({code})"
        return f"{code}.detach().clone()" if snapshot else code

    def _at_point(self, site: Site, captured: list[str]) -> list[str]:
        if site.loop is not None:
            key, group = self._group_of(site)
            values = ([str(site.number)] if len(group) > 1 else []) + captured
            entry = f"({values[0]},)" if len(values) == 1 else f"({', '.join(values)})"
            return [f"{self.names.numbered('log', key)}.append({entry})"]
        texts = []
        if captured:
            value = captured[0] if len(captured) == 1 else f"({', '.join(captured)})"
            texts.append(f"{self.names.numbered('msg', site.number)} = {value}")
        if site.flag:
            texts.append(f"{self.names.numbered('flag', site.number)} = True")
        return texts

    def _epilogue(self, site_code: list[_SiteCode], location: nodes.Return | None) -> list[cst.BaseStatement]:
        """The replays of one epilogue, in source order: direct, flag-tested, or a list replay."""
        statements: list[cst.BaseStatement] = []
        done_groups: set[int] = set()
        for code in site_code:
            site = code.site
            if site.loop is not None:
                key, group = self._group_of(site)
                members = [c for c in site_code if c.site in group]
                reached = any(reach(c.site, location, self.function) is not Reach.NEVER for c in members)
                if key not in done_groups and reached:
                    done_groups.add(key)
                    statements.append(self._map_replay(key, members))
                continue
            reached = reach(site, location, self.function)
            if reached is Reach.NEVER:
                continue
            replay = cst.SimpleStatementLine(body=[cst.Expr(code.replay_call)])
            if not code.at_point:  # the call moves whole: its comments move with it
                replay = replay.with_changes(leading_lines=code.line.leading_lines, trailing_whitespace=code.line.trailing_whitespace)
            if reached is Reach.MAYBE:
                flag = self.names.numbered("flag", site.number)
                replay = cst.If(test=cst.Name(flag), body=cst.IndentedBlock(body=[replay]))
            statements.append(replay)
        return statements

    def _map_replay(self, key: int, members: list[_SiteCode]) -> cst.BaseStatement:
        body: cst.BaseExpression = members[-1].replay_call
        for member in reversed(members[:-1]):
            test = cst.parse_expression(f"_gm_args[0] == {member.site.number}")
            body = cst.IfExp(test=test, body=member.replay_call, orelse=body)
        template = cst.parse_expression(f"list(map(lambda _gm_args: _gm_body, {self.names.numbered('log', key)}))")
        expression = template.visit(_ReplaceName("_gm_body", body))
        return cst.SimpleStatementLine(body=[cst.Expr(expression)])

    def _returning(
        self, returned: nodes.Return, line: cst.SimpleStatementLine, replays: list[cst.BaseStatement]
    ) -> list[cst.BaseStatement]:
        """``_gm_ret = <value>`` when the value does tensor work, the replays, then the return."""
        ret = line.body[0]
        assert isinstance(ret, cst.Return)
        new: list[cst.BaseStatement] = []
        if not is_trivial_value(returned.value):
            name = self.names.single("ret")
            assert ret.value is not None
            new.append(cst.SimpleStatementLine(body=[cst.Assign([cst.AssignTarget(cst.Name(name))], ret.value)]))
            line = line.with_changes(body=[ret.with_changes(value=cst.Name(name))])
        new.extend(replays)
        new.append(line.with_changes(leading_lines=()))
        new[0] = new[0].with_changes(leading_lines=line.leading_lines)
        return new

    def _with_prologue_and_end(self, function: cst.FunctionDef, end: list[cst.BaseStatement]) -> cst.FunctionDef:
        inits = []
        for site in self.plan.sites:
            if site.flag:
                inits.append(self._statement(f"{self.names.numbered('flag', site.number)} = False"))
        for key in self.loop_groups:
            inits.append(self._statement(f"{self.names.numbered('log', key)} = []"))
        block = function.body
        assert isinstance(block, cst.IndentedBlock)
        body = list(block.body)
        at = 1 if body and _is_docstring(body[0]) else 0
        if inits and at < len(body):
            first = body[at]
            inits[0] = inits[0].with_changes(leading_lines=first.leading_lines)
            body[at] = first.with_changes(leading_lines=())
        body[at:at] = inits
        body.extend(end)
        return function.with_changes(body=block.with_changes(body=body))

    def _statement(self, text: str) -> cst.SimpleStatementLine:
        statement = cst.parse_statement(text + "\n", config=self.module.config_for_parsing)
        assert isinstance(statement, cst.SimpleStatementLine)
        return statement

    def _function_edit(self, old: cst.FunctionDef, new: cst.FunctionDef) -> Edit:
        """One edit from ``def`` to the function's last character, holding its new text."""
        start, end = self.index.span(old)
        return Edit(start, end, self._printed_in_place(old, new, start, end) or self._printed_in_module(old, new))

    def _printed_in_place(self, old: cst.FunctionDef, new: cst.FunctionDef, start: Position, end: Position) -> str | None:
        """Print only the function, at its indentation; ``None`` unless the old one prints back exactly."""
        source = self.analysis.source
        indent = source.line(start.line)[: start.col]
        original = indent + source.text[source.offset(start) : source.offset(end)]
        before, after = self.index.render_indented(old, indent), self.index.render_indented(new, indent)
        if before is None or after is None or not before.startswith(original):
            return None
        tail = before[len(original) :]  # the last line's newline, for one
        if tail.strip() or not after.startswith(indent) or not after.endswith(tail):
            return None
        return after[len(indent) : len(after) - len(tail)]

    def _printed_in_module(self, old: cst.FunctionDef, new: cst.FunctionDef) -> str:
        """Print the parsed text with the new function, and cut the function's text out of it."""
        printed = self.index.printed_instead(old, new)
        if printed is None:
            raise Decline("the rewritten function could not be placed back into the file")
        return printed


def _is_docstring(statement: cst.BaseStatement) -> bool:
    return (
        isinstance(statement, cst.SimpleStatementLine)
        and len(statement.body) == 1
        and isinstance(statement.body[0], cst.Expr)
        and isinstance(statement.body[0].value, (cst.SimpleString, cst.ConcatenatedString))
    )


class _Replace(cst.CSTTransformer):
    """Replace nodes by identity; a statement maps to a list (empty: removed)."""

    def __init__(self, mapping: dict) -> None:  # type: ignore[type-arg]
        super().__init__()
        self.mapping = mapping

    def on_leave(self, original_node: cst.CSTNode, updated_node: cst.CSTNode):  # type: ignore[override]
        if original_node not in self.mapping:
            return self._fill_empty(updated_node)
        replacement = self.mapping[original_node]
        if isinstance(replacement, list):
            return cst.FlattenSentinel(replacement) if replacement else cst.RemovalSentinel.REMOVE
        return replacement

    @staticmethod
    def _fill_empty(node: cst.CSTNode) -> cst.CSTNode:
        if isinstance(node, cst.IndentedBlock) and not node.body:
            return node.with_changes(body=[cst.SimpleStatementLine(body=[cst.Pass()])])
        return node


class _ReplaceName(cst.CSTTransformer):
    def __init__(self, name: str, replacement: cst.BaseExpression) -> None:
        super().__init__()
        self.name = name
        self.replacement = replacement

    def leave_Name(self, original_node: cst.Name, updated_node: cst.Name) -> cst.BaseExpression:
        return self.replacement if original_node.value == self.name else updated_node
