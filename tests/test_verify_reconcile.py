"""Pairing runtime break sites with static findings (pure, no torch)."""

from __future__ import annotations

from graphmend_lint.verify.reconcile import Finding, Site, family_of, line_map, reconcile, removed_sites

MODEL = "/project/model.py"
OTHER = "/elsewhere/lib.py"
FAMILIES = {"GB0170": "GM1xx control flow", "GB0124": "GM3xx host sync"}


def site(line: int, gb: str | None = "GB0170", filename: str = MODEL) -> Site:
    return Site(filename, line, gb, "reason", True)


def test_family_names():
    assert family_of("GM101") == "GM1xx control flow"
    assert family_of("GM201") == "GM2xx side effects"
    assert family_of("GM301") == "GM3xx host sync"
    assert family_of("GM402") == "GM4xx shapes"


def test_every_status():
    findings = [
        Finding("GM101", MODEL, 10, 10),  # a break happened here: confirmed
        Finding("GM201", MODEL, 20, 21),  # ran, no break: not_a_break
        Finding("GM301", MODEL, 30, 30),  # never ran: not_run
    ]
    sites = [site(10), site(15, "GB0124"), site(5, filename=OTHER)]
    executed = {MODEL: [10, 15, 21]}
    result = reconcile(sites, findings, [MODEL], executed, FAMILIES)
    assert (result.found, result.missed, result.outside_scope) == (1, 1, 1)
    assert (result.confirmed, result.not_a_break, result.not_run) == (1, 1, 1)
    assert result.per_family == {
        "GM1xx control flow": {"found": 1, "missed": 0, "confirmed": 1, "not_a_break": 0},
        "GM3xx host sync": {"found": 0, "missed": 1, "confirmed": 0, "not_a_break": 0},
        "GM2xx side effects": {"found": 0, "missed": 0, "confirmed": 0, "not_a_break": 1},
    }
    statuses = {(c.site.filename, c.site.line): (c.status, c.codes) for c in result.sites}
    assert statuses[(MODEL, 10)] == ("found", ("GM101",))
    assert statuses[(OTHER, 5)] == ("outside_scope", ())


def test_multi_line_finding_covers_operand_lines():
    # Dynamo blames each operand line of a multi-line condition.
    finding = Finding("GM101", MODEL, 7, 8)
    result = reconcile([site(7), site(8)], [finding], [MODEL], {MODEL: [7, 8]}, FAMILIES)
    assert (result.found, result.missed, result.confirmed) == (2, 0, 1)


def test_unknown_gb_id_goes_to_unknown_family():
    result = reconcile([site(3, None)], [], [MODEL], {}, FAMILIES)
    assert result.per_family == {"unknown": {"found": 0, "missed": 1, "confirmed": 0, "not_a_break": 0}}


def test_paths_compare_by_real_path(tmp_path):
    real = tmp_path / "real.py"
    real.write_text("")
    link = tmp_path / "link.py"
    link.symlink_to(real)
    result = reconcile([site(1, filename=str(link))], [Finding("GM101", str(real), 1, 1)], [str(real)],
                       {str(real): [1]}, FAMILIES)
    assert (result.found, result.confirmed) == (1, 1)


def test_a_site_removed_by_a_fix_elsewhere_is_found_and_the_fix_confirmed():
    cause, harmless = Finding("GM403", MODEL, 6, 6, fixable=True), Finding("GM403", MODEL, 11, 11, fixable=True)
    site = Site(MODEL, 12, "GB0170", "Data-dependent branching", True)
    by_line = reconcile([site], [cause, harmless], [MODEL], {MODEL: [6, 11, 12]}, {})
    assert (by_line.missed, by_line.not_a_break) == (1, 2)  # what pairing by line alone said
    result = reconcile([site], [cause, harmless], [MODEL], {MODEL: [6, 11, 12]}, {},
                       removed_by={cause.key: {site.key}, harmless.key: set()})
    assert [(c.status, c.via, c.codes) for c in result.sites] == [("found", "fix", ("GM403",))]
    assert [(c.finding.line, c.status, c.removes) for c in result.findings] == [
        (6, "confirmed", (12,)), (11, "not_a_break", ())]


def test_removed_sites_map_fixed_lines_back_to_the_original():
    original = "a\nb\nc\nd\n"
    fixed = "a\nnew\nb\nd\n"  # a line inserted before b, c removed
    assert line_map(original, fixed) == {1: 1, 3: 2, 4: 4}
    before = [Site(MODEL, 2, "GB1", "", True), Site(MODEL, 3, "GB2", "", True), Site(MODEL, 4, "GB3", "", True)]
    after = [Site(MODEL, 3, "GB1", "", True), Site(MODEL, 2, "GB9", "", True)]  # b still breaks; `new` is new
    assert removed_sites(before, after, {MODEL: (original, fixed)}) == {(MODEL, 3), (MODEL, 4)}
