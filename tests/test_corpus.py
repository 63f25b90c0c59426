"""The real-code corpus (tests/corpus/): its form, and the linter measured against Dynamo on it.

The Dynamo half runs ``python -m tests.corpus.run --mode fix --gate-sample``
once, in a subprocess whose workers are fresh processes, so no other test's
logging or Dynamo configuration can change a measurement. Truth (the logged
break sites) is measured there, at test time; nothing is cached between runs.
It measures the gate sample, a fixed half of each split chosen by a salted hash
of the name (``layout.in_gate_sample``): the whole corpus no longer fits CI's 90
minutes beside the rest. The numbers docs/corpus.md reports come from the whole
corpus (``python -m tests.corpus.run --split all --mode fix --causes``).

The gates are a regression gate: the values the gate sample measured when they
were set, minus a small margin. Raise them when detection improves; never lower
them to make a change pass.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:  # `tests.corpus` is imported as a package from the repository root
    sys.path.insert(0, str(REPO))

from tests.corpus import layout  # noqa: E402
from tests.corpus.acid import acid  # noqa: E402

#: The size issue 14 asks for.
CORPUS_SIZE_FLOOR = 300
#: Dev logged sites of the gate sample left after ``--fix --unsafe-fixes``: 685 of 853 in both CI rehearsals
#: of 2026-12-02 (05:32 UTC, the whole corpus re-scored, whose dev split kept 1379 of 1780; 06:41 UTC, the
#: sample itself), plus a margin of 9 for the programs whose logged lines vary between runs (the whole
#: split's ceiling had 17). Reset only when the corpus grows.
UNSAFE_SITES_AFTER_CEILING = 694
#: Precision/recall floors per split and scope: the gate sample's values minus 0.03, so a change that loses
#: detection fails here, measured by the CI rehearsal of 2026-12-02 06:41 UTC (617 dev and 314 held-out
#: programs). "precision" is strict (a finding on a line Dynamo never traced counts as wrong);
#: "precision_observed" leaves those lines out. Truth counts breaks in eval and train mode.
DETECTION_FLOORS: dict[tuple[str, str], dict[str, float]] = {
    ("dev", "compiled"): {"precision": 0.63, "precision_observed": 0.95, "recall": 0.87},  # 0.66 (750/1128) / 0.98 / 0.91 (750/826)
    ("dev", "modules"): {"precision": 0.62, "precision_observed": 0.95, "recall": 0.88},  # 0.66 (753/1149) / 0.98 / 0.91 (753/826)
    ("heldout", "compiled"): {"precision": 0.60, "precision_observed": 0.93, "recall": 0.79},  # 0.63 (381/604) / 0.965 / 0.82 (381/464)
    ("heldout", "modules"): {"precision": 0.59, "precision_observed": 0.93, "recall": 0.81},  # 0.63 (391/621) / 0.963 / 0.84 (391/464)
}
#: Modules that make() builds with a submodule in eval mode are measured again after .train()
#: (docs/corpus.md "Both modes"). In the gate sample (same run): 122 dev + 66 held-out such programs, which
#: logged 16 + 7 lines only in training.
TRAINING_RUNS_FLOOR = 185
TRAINING_ONLY_LINES_FLOOR = 20
#: Known wrong outputs after a fix, per (split, mode): none. (GM104's old `torch._assert_async`
#: rewrite changed torchvision normalize's ValueError into a RuntimeError eagerly; GM104 now keeps
#: the eager `if` untouched and offers its compiled check only as an opt-in.)
KNOWN_WRONG_OUTPUTS: dict[tuple[str, str], int] = {}
#: Dev programs whose every logged break got a fix, yet ``fullgraph=True`` still fails after it, per mode.
#: Stable Diffusion's DDIM sampler: with its prints guarded (GM201's unsafe fix) Dynamo reaches
#: ``to_torch(np.sqrt(alphas_cumprod.cpu()))``, where ``np.sqrt`` of a tensor is a tensor eagerly but an
#: ndarray when traced, and fails on its ``.clone()`` (GB4315, a compile error, not a break; measured
#: 2026-11-29). Before the fix the prints' breaks kept Dynamo from tracing that line. GM519 now rewrites
#: those ``np.sqrt``/``np.log`` calls to torch's (unsafe), and fullgraph stops next at
#: ``alphacums[ddim_timesteps[:-1]].tolist()`` (GB0109), which GM302 only advises on.
#: BLIP's VQA answer ranking (a blind program of 2026-11-29 18:00 UTC) also still fails after the unsafe fixes:
#: not investigated yet. Two blind programs of 2026-11-29 21:00 UTC too: Flowtron's autoregressive step logs only
#: its GRU (GB0014); with `allow_rnn` on, Dynamo reaches the gate's `if` on a tensor (GB0170 at line 239; GM101
#: reports the condition's first line, 237, a line-placement miss not yet looked at); lift-splat-shoot's voxel
#: pooling, under the capture switch, fails on a guard on a data-dependent size (not investigated). MDLM's
#: sampling loop (a blind program of 2026-11-30 03:00 UTC) breaks inside its loop, so Dynamo runs the frame
#: eagerly and logs nothing after it; once the capture switch fixes that break, fullgraph stops at the loop's
#: `if not torch.allclose(x_next, x)` (GB0033), which GM303 reports (unobserved before) with advice only.
#: Two XGLM census programs (blind, 2026-11-30 17:00 UTC) break only in training, at LayerDrop's draw; GM101's
#: LayerDrop rewrite gives the compiler its branch-free twin only when neither `use_cache` nor `output_attentions`
#: is set (the layer's outputs then hold a cache or attention maps that a `torch.where` cannot select), and
#: XGLM's config turns `use_cache` on, so the training run keeps the original `if` (measured 17:53 UTC).
#: Blenderbot's encoder (a blind program of 2026-11-30 21:00 UTC) hits the same limit: one of its input sets
#: asks for `output_attentions`, so that call keeps LayerDrop's `if` (GB0170 at the draw, measured 21:20 UTC).
#: Qwen2-Audio's encoder (a blind program of 2026-12-01 00:40 UTC) too: its second input set asks for
#: `output_attentions`, and the training run keeps LayerDrop's `if` (GB0170, measured 01:20 UTC).
#: The gate measures the ones in its sample (``layout.in_gate_sample``).
KNOWN_ACID_FAILURES: dict[str, list[str]] = {
    "safe": [],
    "unsafe": [
        "census_xglm_causal_lm_cached_decode_step",
        "census_xglm_decoder_sinusoidal_positions_layerdrop",
        "hf_blenderbot_encoder_layerdrop_rand_head_mask",
        "hf_qwen2_audio_encoder_feature_length_check",
        "zoo_blip_vqa_rank_answer",
        "zoo_flowtron_ar_step_infer_gate_threshold",
        "zoo_ldm_ddim_sampler_print_make_schedule",
        "zoo_liftsplat_voxel_pooling_quick_cumsum",
        "zoo_mdlm_sample_loop_allclose_cache",
    ],
}
#: Programs whose logged sites grow under ``--unsafe-fixes``, per split (held-out: a count only).
#: MuZero's trainer: the capture switch removes both masked updates' breaks, and Dynamo then reaches the four
#: ``.item()`` calls after them, which it never traced before (GM301 reports them; verified 2026-11-29 with the
#: switch alone: 2 sites -> the 4 ``.item()`` lines). nanodet's assigner grew 7 -> 11 in the full run of 18:30 UTC
#: under the same switch, not localised yet. The three held-out ones are all in programs of this session's blind
#: batches (aggregate of those programs alone: 3), not localised (held-out). The held-out safe one (2026-11-30
#: 11:02 UTC) is one of the 35 held-out programs of the s20 batches: its only safe fix is a GM201 print-op
#: rewrite, which leaves one logged site more (53 -> 54 over those 35). Not localised (held-out): probes of
#: 30 print shapes on dev-side code (f-strings, specs, `.item()`, `%`, loops, helpers, NumPy values) found
#: none that adds a break; `"..." % t` was one such candidate and is no longer rewritten.
KNOWN_MORE_BREAKS: dict[tuple[str, str], set[str] | int] = {
    ("dev", "unsafe"): {"zoo_muzero_trainer_unroll_register_hook", "zoo_nanodet_dynamic_soft_label_assigner"},
    ("heldout", "unsafe"): 3,
    ("heldout", "safe"): 1,
}
#: A negative (zero logged breaks) is real code the linter must stay quiet on.
NEGATIVE_SHARE = (0.25, 0.50)

PROGRAMS = layout.discover("all")


def test_corpus_size() -> None:
    assert len(PROGRAMS) >= CORPUS_SIZE_FLOOR, f"{len(PROGRAMS)} programs, floor {CORPUS_SIZE_FLOOR}"


def test_every_split_is_represented() -> None:
    splits = {program.split for program in PROGRAMS}
    assert splits == set(layout.SPLITS)


def test_program_form() -> None:
    """Name, split by hash, a Source line and a make() in every file."""
    problems = [f"{p.split}/{p.name}: {problem}" for p in PROGRAMS for problem in layout.format_problems(p)]
    assert problems == []


def test_split_is_decided_by_the_name_alone() -> None:
    assert layout.split_of("hf_longformer_encoder_global_item") == "dev"
    heldout = [p.name for p in PROGRAMS if p.split == "heldout"]
    assert heldout and all(layout.split_of(name) == "heldout" for name in heldout)
    # a third, give or take the luck of the hash
    assert 0.22 <= len(heldout) / len(PROGRAMS) <= 0.45


def test_the_gate_sample_is_half_of_each_split_by_name() -> None:
    """Fixed by the name alone, and not the split's hash again (that would keep one split whole or leave it out)."""
    for split in layout.SPLITS:
        members = [p.name for p in PROGRAMS if p.split == split]
        sampled = [name for name in members if layout.in_gate_sample(name)]
        assert 0.45 <= len(sampled) / len(members) <= 0.55, (split, len(sampled), len(members))
    assert [p.name for p in layout.discover("all", gate_sample=True)] == [
        p.name for p in PROGRAMS if layout.in_gate_sample(p.name)
    ]


#: Where a CI run keeps its measurement (the JSON and the printed tables), so the numbers a closing note
#: reports can come from the very run that gated the code instead of a second one.
REPORT_DIR_VARIABLE = "GRAPHMEND_CORPUS_REPORT_DIR"


@pytest.fixture(scope="module")
def corpus_run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One detect+fix measurement of the gate sample (931 programs: 1970 s on 2 cores, 2026-12-02 06:46 UTC).

    The limit (50 minutes) leaves a margin for a slow machine inside the whole CI run's 90 minutes.
    """
    kept = os.environ.get(REPORT_DIR_VARIABLE)
    report_dir = Path(kept) if kept else tmp_path_factory.mktemp("corpus")
    report_dir.mkdir(parents=True, exist_ok=True)
    out = report_dir / "corpus.json"
    completed = subprocess.run(
        [sys.executable, "-m", "tests.corpus.run", "--split", "all", "--mode", "fix", "--gate-sample", "--causes",
         "--json", str(out)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=3000,
    )
    (report_dir / "corpus.txt").write_text(completed.stdout + completed.stderr)
    assert completed.returncode == 0, completed.stderr[-3000:]
    print(completed.stdout)
    return json.loads(out.read_text())


@pytest.mark.dynamo
def test_every_program_runs(corpus_run: dict[str, Any]) -> None:
    """Every program imports, makes its inputs, and raises in eager mode only where it declares so."""
    assert corpus_run["unmeasured"] == []
    assert corpus_run["eager_broken"] == {}


@pytest.mark.dynamo
def test_negatives_are_a_real_share(corpus_run: dict[str, Any]) -> None:
    splits = corpus_run["splits"].values()
    programs = sum(split["detection"]["compiled"]["programs"] for split in splits)
    negatives = programs - sum(split["detection"]["compiled"]["programs_with_breaks"] for split in splits)
    low, high = NEGATIVE_SHARE
    assert low <= negatives / programs <= high, f"{negatives} negatives of {programs}"


@pytest.mark.dynamo
def test_eval_built_modules_are_measured_in_training_too(corpus_run: dict[str, Any]) -> None:
    """Truth counts breaks in eval and train mode; a training run that fails is recorded, and must not happen here."""
    training = [split["detection"]["compiled"]["training"] for split in corpus_run["splits"].values()]
    assert sum(counts["measured"] for counts in training) >= TRAINING_RUNS_FLOOR, training
    assert sum(counts["logged_only_in_training"] for counts in training) >= TRAINING_ONLY_LINES_FLOOR, training
    assert sum(counts["failed"] for counts in training) == 0, training


@pytest.mark.dynamo
@pytest.mark.parametrize(("split", "scope"), sorted(DETECTION_FLOORS))
def test_detection_floors(corpus_run: dict[str, Any], split: str, scope: str) -> None:
    overall = corpus_run["splits"][split]["detection"][scope]["overall"]
    floors = DETECTION_FLOORS[(split, scope)]
    for measure, floor in floors.items():
        assert overall[measure] is not None and overall[measure] >= floor, (measure, overall)


@pytest.mark.dynamo
@pytest.mark.parametrize("split", layout.SPLITS)
@pytest.mark.parametrize("mode", ["safe", "unsafe"])
def test_fixes_never_change_eager_behaviour(corpus_run: dict[str, Any], split: str, mode: str) -> None:
    """Returns, exceptions, stdout, log records and warnings are equal after --fix; every fixed file imports."""
    fixed = corpus_run["splits"][split]["fix"][mode]
    wrong = fixed["wrong_outputs"]
    count = wrong if isinstance(wrong, int) else len(wrong)  # held-out answers are counts only
    assert count == KNOWN_WRONG_OUTPUTS.get((split, mode), 0), wrong
    assert fixed["broken"] in ([], 0), fixed["broken"]


@pytest.mark.dynamo
@pytest.mark.parametrize("split", layout.SPLITS)
@pytest.mark.parametrize("mode", ["safe", "unsafe"])
def test_fixes_never_add_logged_breaks(corpus_run: dict[str, Any], split: str, mode: str) -> None:
    fixed = corpus_run["splits"][split]["fix"][mode]
    more = fixed["more_breaks"]
    known = KNOWN_MORE_BREAKS.get((split, mode), set())
    if isinstance(more, int):  # held-out answers are counts only
        assert more <= (known if isinstance(known, int) else 0), more
    else:
        assert {entry.split(":")[0] for entry in more} <= (known if isinstance(known, set) else set()), more
    assert fixed["sites_after"] <= fixed["sites_before"]


@pytest.mark.dynamo
@pytest.mark.parametrize("mode", ["safe", "unsafe"])
def test_fixes_never_move_breaks_into_other_files(corpus_run: dict[str, Any], mode: str) -> None:
    """A fix must not push a break into torch's own code (a capture switch once moved two into its loss module).

    The per-file site count cannot see that, so each dev program's breaks in other files are compared too.
    """
    moved = [
        name for name, answer in corpus_run["answers"].items()
        if (fixed := answer["variants"].get(mode)) and len(fixed["foreign_sites"]) > len(answer["original"]["foreign_sites"])
    ]
    assert moved == []


@pytest.mark.dynamo
def test_unsafe_fixes_remove_at_least_what_they_did(corpus_run: dict[str, Any]) -> None:
    """A regression gate on the fixes' effect: dev logged sites after ``--unsafe-fixes``."""
    fixed = corpus_run["splits"]["dev"]["fix"]["unsafe"]
    assert fixed["sites_after"] <= UNSAFE_SITES_AFTER_CEILING, fixed


@pytest.mark.dynamo
@pytest.mark.parametrize("mode", ["safe", "unsafe"])
def test_a_program_whose_every_break_got_a_fix_compiles_whole(corpus_run: dict[str, Any], mode: str) -> None:
    """The acid test on the dev split: every logged line fixed means ``fullgraph=True`` passes after the fix."""
    eligible, failing = acid(layout.discover("dev", gate_sample=True), corpus_run["answers"], mode)
    assert eligible >= 5, eligible  # enough programs that the test can fail
    assert sorted(failing) == [name for name in KNOWN_ACID_FAILURES[mode] if layout.in_gate_sample(name)]
