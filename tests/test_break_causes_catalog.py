"""The catalog of the break-cause rules (GM106, GM205, GM303, GM404, GM501-GM524): findings and fixes, without Dynamo.

:data:`CASES` lists, for every program, the findings the linter must report
and the breaks Dynamo logs, measured on torch 2.13 (CPU, Python 3.11) and
re-checked by ``tests/test_break_causes_dynamo.py``. A break is placed at the
innermost line of the program's own file in the stack Dynamo logs: Dynamo
names ``copy.py`` for a ``copy.deepcopy`` of a tensor, ``functools.py`` for the lock of a
``cached_property``, ``dataclasses.py`` for the ``exec`` of ``@dataclass``; the program line that
called into the standard library is where the rule reports, and where verify sites the break.
"""

from __future__ import annotations

import pytest
from catalog_cases import CATALOG, Case, case, check_cases_cover_the_catalog, findings, fix_pairs

from graphmend_lint import fix_source
from graphmend_lint.config import load_settings

CODES = (
    "GM106", "GM205", "GM303", "GM404", "GM501", "GM502", "GM503", "GM504", "GM505", "GM506", "GM507", "GM508",
    "GM509", "GM510", "GM511", "GM512", "GM513", "GM514", "GM515", "GM516", "GM517", "GM518",
    "GM519", "GM520", "GM521", "GM522", "GM523", "GM524",
)  # fmt: skip

CASES: dict[str, Case] = {
    "GM106/bad_assert_fstring.py": case({(11, "GM106")}, {(11, "GB0170")}),
    "GM106/fixed_assert_fstring.py": case(),
    "GM106/neg_assert_constant.py": case(),
    "GM205/bad_is_enabled_for.py": case({(17, "GM205")}, {(17, "GB0291")}),
    "GM205/fixed_is_enabled_for.py": case(),
    "GM205/bad_effective_level.py": case({(17, "GM205")}, {(17, "GB0291")}),
    "GM205/neg_guarded_level_check.py": case(),
    # the truth of the logger's own fields (GB4841) at the `if`: Dynamo then runs the frame eagerly
    "GM205/bad_logger_handlers.py": case({(23, "GM205")}, {(23, "GB4841")}, frame_skipped=True),
    # allclose in the if: the fix keeps it a tensor and GM101 predicates the branch
    "GM303/bad_allclose_centre.py": case({(9, "GM303")}, {(9, "GB0033")}),
    "GM303/fixed_allclose_centre.py": case(),
    "GM303/bad_equal_shared_kv.py": case({(8, "GM303")}, {(8, "GB0033")}),
    "GM303/neg_isclose_select.py": case(),
    # `is_nonzero` reads the gate back into a Python bool at the call (advice only)
    "GM303/bad_is_nonzero_gate.py": case({(19, "GM303")}, {(19, "GB0033")}),
    # ChatGLM's `MASK in input_ids`: `Tensor.__contains__` reads the answer back with `.item()`, then the frame runs eagerly
    "GM303/bad_membership_mask_token.py": case({(14, "GM303")}, {(14, "GB0124")}, frame_skipped=True),
    "GM404/bad_greedy_embedding.py": case({(15, "GM404")}, {(15, "GB0033")}),
    "GM404/fixed_greedy_embedding.py": case(),
    "GM404/neg_batched_index.py": case(),
    # each step of a loop over a 1-d tensor is 0-d: the scheduler's read with it breaks at every step
    "GM404/bad_sampler_timesteps.py": case({(22, "GM404")}, {(22, "GB0033")}, frame_skipped=True),
    "GM404/neg_timestep_rows.py": case(),
    # a whole-tensor reduction minus one as the index (advice: it may be negative); the 1-d index is kept
    "GM404/bad_last_valid_row.py": case({(15, "GM404")}, {(15, "GB0033")}),
    # 0-d items of nonzero rows as the positions of an assignment's multi-axis index (vissl): the resumed frame breaks in a loop and runs eagerly
    "GM404/bad_store_nonzero_rows.py": case(
        {(14, "GM401"), (16, "GM404")}, {(14, "GB0036"), (16, "GB0033")}, frame_skipped=True
    ),
    # open-unmix: rows of cartesian_prod; the value's index breaks first, and the loop then runs eagerly
    # Autoformer: each of the top-k positions indexes the mean (GB0033 at the comprehension)
    "GM404/bad_top_k_delays.py": case({(15, "GM404")}, {(15, "GB0033")}, frame_skipped=True),
    "GM404/bad_cartesian_rows.py": case({(18, "GM404")}, {(18, "GB0033")}, frame_skipped=True),
    "GM501/bad_lstm_encoder.py": case({(17, "GM501")}, {(17, "GB0014")}),
    "GM501/fixed_lstm_encoder.py": case(),
    "GM501/neg_allow_rnn.py": case(),
    # next(self.parameters()) walks the submodules down to an encoder's LSTM; the encoder's own read breaks too
    "GM501/bad_parameters_dtype_walk.py": case(
        {(19, "GM501"), (30, "GM501")}, {(19, "GB0014"), (30, "GB0014")}, frame_skipped=True
    ),
    # built by the base class's __init__, read in the subclass's forward
    "GM501/bad_lstm_in_base_class.py": case({(20, "GM501")}, {(20, "GB0014")}, frame_skipped=True),
    # `getattr(nn, rnn_type)` with rnn_type "LSTM" from the constructors' defaults: Dynamo skips forward
    "GM501/bad_getattr_rnn_type.py": case({(18, "GM501")}, {(18, "GB0014")}, frame_skipped=True),
    # the first read of the module, not its call, is where Dynamo refuses it (cleanrl's PPO-LSTM agent)
    "GM501/bad_lstm_state_per_step.py": case({(17, "GM501")}, {(17, "GB0014")}, frame_skipped=True),
    # a ModuleDict item, layers stored with add_module and setattr, a ModuleList item by index (GB0014)
    "GM501/bad_rnn_stored_by_name.py": case(
        {(20, "GM501"), (26, "GM501"), (38, "GM501")}, {(20, "GB0014"), (26, "GB0014"), (38, "GB0014")}, frame_skipped=True
    ),
    # layers from a factory, a ModuleList walked by a loop, a subclass passed to the constructor
    "GM501/bad_rnn_built_elsewhere.py": case(
        {(17, "GM501"), (34, "GM501"), (47, "GM501")}, {(17, "GB0014"), (34, "GB0014"), (47, "GB0014")}, frame_skipped=True
    ),
    # a ModuleList of a linear layer and a GRU, each called by its position: only the GRU's call breaks
    "GM501/bad_rnn_by_position.py": case({(16, "GM501")}, {(16, "GB0014")}),
    # a ModuleList's GRUs called in a comprehension, an LSTM read as self._modules["rnn"]
    "GM501/bad_rnn_comprehension_registry.py": case(
        {(18, "GM501"), (28, "GM501")}, {(18, "GB0014"), (18, "GB0092"), (18, "GB4347"), (28, "GB0014")},
        frame_skipped=True,
    ),
    "GM502/bad_deepcopy_state.py": case({(15, "GM502")}, {(15, "GB4198")}),
    "GM502/fixed_deepcopy_state.py": case(),
    "GM502/bad_deepcopy_module.py": case({(14, "GM502")}, {(14, "GB4198")}),
    "GM502/neg_deepcopy_config.py": case(),
    "GM502/bad_shallow_copy_scales.py": case({(15, "GM502"), (17, "GM502")}, {(15, "GB0007"), (17, "GB0007")}),
    "GM502/fixed_shallow_copy_scales.py": case(),
    "GM502/neg_shallow_copy_tuple.py": case(),
    # a break in a loop: Dynamo gives up on the whole forward
    "GM503/bad_feature_encoder_grad.py": case({(20, "GM503")}, {(20, "GB0206")}),
    "GM503/fixed_feature_encoder_grad.py": case(),
    "GM503/bad_freeze_in_forward.py": case({(14, "GM503")}, {(14, "GB0206")}, frame_skipped=True),
    "GM503/bad_leaf_in_forward.py": case({(6, "GM503"), (7, "GM503")}, {(6, "GB0225"), (7, "GB0125")}),
    "GM503/neg_requires_grad_off.py": case(),
    # MaskFormer's query leaf and MRA's returned leaf: requires grad only when not compiling (unsafe)
    "GM503/bad_query_leaf.py": case({(15, "GM503")}, {(15, "GB0225")}),
    "GM503/fixed_query_leaf.py": case(),
    "GM503/bad_returned_leaf.py": case({(10, "GM503")}, {(10, "GB8985")}),
    "GM503/fixed_returned_leaf.py": case(),
    # the returned value derives from the switched-on tensor through another name
    "GM503/bad_derived_leaf.py": case({(17, "GM503")}, {(17, "GB8985")}),
    "GM503/fixed_derived_leaf.py": case(),
    # the detached copy is alive at the autograd.grad break (GM507's), which breaks too
    "GM503/bad_saliency_leaf.py": case({(18, "GM503"), (21, "GM507")}, {(18, "GB8985"), (21, "GB9186")}),
    "GM504/bad_ctrl_pos_encoding.py": case({(21, "GM504")}, {(21, "GB4841")}),
    "GM504/fixed_ctrl_pos_encoding.py": case(),
    "GM504/neg_register_buffer.py": case(),
    # the buffer breaks inside the try: Dynamo runs the wrapper eagerly, then breaks in the dictcomp's frame
    "GM505/bad_output_capturing.py": case(
        {(18, "GM505"), (46, "GM504")}, {(18, "GB4347"), (46, "GB4841")}, frame_skipped=True
    ),
    "GM505/fixed_output_capturing.py": case(),
    "GM505/bad_output_capturing_lstm.py": case(
        {(17, "GM505"), (43, "GM501")}, {(17, "GB4347"), (43, "GB0014")}, frame_skipped=True
    ),
    "GM505/neg_flags_only.py": case(),
    # the `try` runs layers of a sliced ModuleList (Llama's decoder loop), none of which break
    "GM505/neg_sliced_layers.py": case(),
    # the body breaks (GM402's tensor slice bound), so Dynamo compiles the listcomp frame alone: GB4347 on zip
    "GM505/bad_matcher_enumerate.py": case(
        {(13, "GM302"), (20, "GM505")}, {(13, "GB0033"), (20, "GB8335")}, frame_skipped=True
    ),
    "GM505/bad_patch_slices.py": case(
        {(19, "GM505"), (20, "GM402")}, {(19, "GB4347"), (20, "GB0124")}, frame_skipped=True
    ),
    # the module is built inside its own __init__: the first nn.Linear breaks, then the retried __init__ frame
    # fails on its uninitialized self at super().__init__() and runs eagerly
    # (the block-sparse module, built only for a value forward never passes, breaks nowhere)
    "GM506/bad_attention_switch.py": case(
        {(13, "GM506"), (15, "GM506")}, {(13, "GB0119"), (15, "GB0264")}, frame_skipped=True
    ),
    "GM506/bad_parameter_in_forward.py": case({(13, "GM506"), (14, "GM506")}, {(13, "GB0264"), (14, "GB0264")}),
    "GM506/neg_prebuilt_modules.py": case(),
    # a skipped call in `__init__` (GM507's), then the retried frame's GB0119 at `super(...).__init__()`
    "GM506/bad_skipped_call_in_init.py": case(
        {(16, "GM506"), (17, "GM507")}, {(16, "GB0119"), (17, "GB0007")}, frame_skipped=True
    ),
    "GM507/bad_packed_encoder.py": case({(16, "GM507")}, {(16, "GB0007")}),
    "GM507/bad_disabled_helper.py": case({(15, "GM507"), (16, "GM507")}, {(15, "GB0025"), (16, "GB0098")}),
    # recursive=False skips the method's own frame only: the call logs GB0099, the wrappers GB0098
    "GM507/bad_disabled_wrappers.py": case(
        {(30, "GM507"), (31, "GM507"), (32, "GM507")}, {(30, "GB0098"), (31, "GB0099"), (32, "GB0098")}
    ),
    # the unsupported context manager is logged twice on its line, and Dynamo runs the resumed frame eagerly
    "GM507/bad_cudnn_flags.py": case({(15, "GM507")}, {(15, "GB0142"), (15, "GB0208")}, frame_skipped=True),
    "GM507/neg_traced_helpers.py": case(),
    "GM507/bad_kl_divergence_vae.py": case({(19, "GM507")}, {(19, "GB0059")}),
    # gpt-fast's sdp_kernel block is logged twice on its line, like cudnn.flags; after either context, the resumed
    # frame runs eagerly
    "GM507/bad_sdp_kernel_decode.py": case({(17, "GM507")}, {(17, "GB0142"), (17, "GB0208")}, frame_skipped=True),
    "GM507/bad_device_context.py": case({(18, "GM507")}, {(18, "GB0142")}, frame_skipped=True),
    # a host query returning a Python int (GB0208)
    "GM507/bad_device_count_shards.py": case({(17, "GM507")}, {(17, "GB0208")}),
    # retain_grad() on an intermediate (GB0108)
    "GM507/bad_retain_grad_debug.py": case({(20, "GM507")}, {(20, "GB0108")}),
    "GM507/bad_backward_step.py": case({(26, "GM507"), (28, "GM507")}, {(26, "GB0123"), (28, "GB0007")}),
    # torch.jit and torch.random are modules Dynamo skips; the builtin isinstance is folded (safe fix)
    "GM507/bad_jit_isinstance.py": case({(14, "GM507"), (16, "GM507")}, {(14, "GB0007"), (16, "GB0007")}),
    "GM507/fixed_jit_isinstance.py": case(),
    "GM507/bad_autograd_variable.py": case({(13, "GM507")}, {(13, "GB0007")}),
    "GM507/bad_rng_state_restore.py": case({(17, "GM507"), (19, "GM507")}, {(17, "GB0007"), (19, "GB0007")}),
    # Dynamo runs an allow_in_graph function on fake tensors: the branch breaks at the call, then in its own frame
    "GM507/bad_allow_in_graph_branch.py": case({(25, "GM507"), (13, "GM101")}, {(25, "GB0033"), (13, "GB0170")}),
    # one mask as both the query and the key mask: a view for the repeat traces whole (training mode)
    "GM508/bad_yoso_cumulation.py": case({(47, "GM508")}, {(47, "GB6297")}),
    "GM508/fixed_yoso_cumulation.py": case(),
    "GM508/neg_distinct_masks.py": case(),
    # the lock is entered on the model's first call, where the hooks are installed; Dynamo runs that frame eagerly
    "GM509/bad_hook_install_lock.py": case({(17, "GM509")}, {(17, "GB0142")}, frame_skipped=True),
    "GM509/neg_lock_around_call.py": case(),
    # Python 3.11's cached_property computes under an RLock: Dynamo runs forward (and __get__) eagerly
    "GM509/bad_cached_property.py": case(
        {(19, "GM509")}, {(19, "GB0142")}, frame_skipped=True
    ),
    "GM509/fixed_cached_property.py": case(),
    "GM510/bad_local_config_class.py": case({(18, "GM510")}, {(18, "GB8977")}),
    "GM510/fixed_local_config_class.py": case(),
    # the body names torch: Dynamo fails on it at the decorator's line, and on the exec inside @dataclass there too
    "GM510/bad_output_dataclass.py": case(
        {(13, "GM510"), (14, "GM510")},
        {(13, "GB0082"), (13, "GB0059"), (14, "GB8977")},
        frame_skipped=True,
    ),
    "GM510/neg_module_level_class.py": case(),
    # Dynamo gives up on forward: one break, no graph
    "GM511/bad_low_rank_operator.py": case({(30, "GM511")}, {(30, "GB0055")}, frame_skipped=True),
    "GM511/fixed_low_rank_operator.py": case(),
    "GM511/neg_torch_function_operator.py": case(),
    "GM512/bad_maybe_align.py": case({(12, "GM512")}, {(12, "GB0088")}, frame_skipped=True),
    "GM512/neg_pointer_passthrough.py": case(),
    # logged inside the helper, where the generator reaches torch.randn
    "GM513/bad_seeded_noise.py": case({(12, "GM513")}, {(12, "GB0055")}),
    "GM513/neg_global_rng_noise.py": case(),
    # the scaler's line logs backward's GB0123 too: GM507's, on a receiver of unknown kind in a file with no
    # `backward` of its own
    "GM514/bad_amp_train_step.py": case(
        {(21, "GM514"), (22, "GM514"), (22, "GM507"), (23, "GM514"), (25, "GM514"), (26, "GM514")},
        {(21, "GB0008"), (22, "GB0008"), (22, "GB0123"), (23, "GB0008"), (25, "GB0008"), (25, "GB0025"),
         (26, "GB0008")},
    ),  # fmt: skip
    # the scheduler wrapped the optimizer's step in lr_scheduler.py (GB0007)
    "GM514/bad_trainer_scheduler.py": case(
        {(25, "GM507"), (26, "GM514"), (27, "GM514"), (28, "GM514")},
        {(25, "GB0123"), (26, "GB0007"), (26, "GB0025"), (27, "GB0008"), (28, "GB0008")},
    ),
    "GM514/neg_compiled_model_eager_step.py": case(),
    # an argument used as an optimizer (`step` and `zero_grad`), after `backward` (GM507's)
    "GM514/bad_optimizer_argument.py": case(
        {(14, "GM507"), (15, "GM514"), (16, "GM514")}, {(14, "GB0123"), (15, "GB0025"), (16, "GB0008")}
    ),
    "GM515/bad_grad_scaling_block.py": case({(34, "GM515")}, {(34, "GB0083")}),
    "GM515/bad_probe_backward_hook.py": case({(24, "GM515")}, {(24, "GB0104")}),
    "GM515/neg_tensor_hook.py": case(),
    "GM516/bad_lazy_fused_swap.py": case({(24, "GM516")}, {(24, "GB4271")}),
    "GM516/bad_tagged_tensor.py": case({(15, "GM516")}, {(15, "GB0058")}),
    "GM516/neg_swap_in_init.py": case(),
    "GM517/bad_prompt_speaker_tags.py": case({(19, "GM517"), (20, "GM517")}, {(19, "GB0156"), (20, "GB0156")}),
    "GM517/neg_replace_before_encode.py": case(),
    # logged in `__new__`, where the empty `super().__new__` call is
    "GM518/bad_spike_state_placeholder.py": case({(15, "GM518")}, {(15, "GB7312")}),
    "GM518/neg_state_from_tensor.py": case(),
    # not a break: compiling fails at `to_torch`'s `.clone()` of the ndarray; the findings sit on the NumPy calls
    "GM519/bad_ddim_schedule.py": case({(20, "GM519"), (21, "GM519")}, compile_error="GB4315"),
    "GM519/fixed_ddim_schedule.py": case(),
    "GM519/neg_numpy_into_torch_ops.py": case(),
    # a method whose `.item()` breaks, called on a tree node the frame built: Dynamo cannot rebuild it (MuZero)
    # (the frame then runs eagerly)
    "GM520/bad_tree_search_root.py": case(
        {(20, "GM301"), (33, "GM520")}, {(20, "GB0124"), (33, "GB0092")}, frame_skipped=True
    ),
    # the same node handed to a helper: the helper's frame receives it, and only the `.item()` breaks
    "GM520/neg_root_passed_to_helper.py": case({(18, "GM301")}, {(18, "GB0124")}),
    # pygcn: a sparse adjacency read in each frame it reaches (the step, the model, each layer) (GB0015)
    "GM521/bad_gcn_sparse_adjacency.py": case(
        {(20, "GM521"), (30, "GM521"), (46, "GM521")}, {(20, "GB0015"), (30, "GB0015"), (46, "GB0015")}, frame_skipped=True
    ),
    # densified before the compiled model reads it: no sparse tensor in traced code
    # wrapped where first used: not at `adj = self.adj`, nor at the call's first line (its `_nnz()` runs first)
    "GM521/bad_adjacency_read_late.py": case(
        {(21, "GM521"), (25, "GM521"), (29, "GM521")},
        {(21, "GB0015"), (25, "GB0015"), (29, "GB0015")},
        frame_skipped=True,
    ),
    "GM521/neg_dense_adjacency.py": case(),
    # torch-harmonics' inverse SHT: setting `.imag` on a tensor is refused; the in-place write on the view traces
    "GM522/bad_inverse_sht_nyquist.py": case({(12, "GM522")}, {(12, "GB0058")}),
    "GM522/neg_inverse_sht_inplace.py": case(),
    # kornia's Dice loss and snnTorch's membrane reset: in-place shape / detach changes of tensors from outside
    "GM523/bad_dice_mask_unsqueeze.py": case({(9, "GM523")}, {(9, "GB0148")}),
    "GM523/bad_membrane_detach.py": case({(16, "GM523")}, {(16, "GB0148")}),
    "GM523/neg_computed_views.py": case(),
    # deepspeed's MoE gate (LLaMA-MoE's copy) caches Gumbel(zero, one).rsample: replayed at each return; the object replays
    "GM524/bad_moe_gumbel_cache.py": case({(26, "GM524")}, {(26, "GB0092")}, frame_skipped=True),
    "GM524/neg_moe_gumbel_object_cache.py": case(),
}
#: Pairs whose fix is safe (applied by a plain ``--fix``); every other fix is unsafe.
SAFE_FIXES = frozenset(
    {"GM205/fixed_is_enabled_for.py", "GM502/fixed_shallow_copy_scales.py", "GM507/fixed_jit_isinstance.py"}
)


def test_the_cases_cover_the_catalog() -> None:
    check_cases_cover_the_catalog(CODES, CASES)


@pytest.mark.parametrize("name", sorted(CASES))
def test_findings_are_exactly_the_expected_lines(name: str) -> None:
    """Findings of these rules, and of any other rule the case names (GM402 inside a GM505 comprehension)."""
    codes = {*CODES, *(code for _, code in CASES[name].findings)}
    assert findings(name, codes) == set(CASES[name].findings)


@pytest.mark.parametrize("name", sorted(CASES))
def test_finding_lines_are_the_break_lines(name: str) -> None:
    """The table itself: every finding sits on a line Dynamo breaks on, and every break line is found."""
    expected = CASES[name]
    if expected.compile_error is not None:
        assert expected.findings and not expected.breaks  # nothing is logged: the findings are the fix sites
        return
    assert {line for line, _ in expected.findings} == {line for line, _ in expected.breaks}


@pytest.mark.parametrize(("bad", "fixed"), fix_pairs(CODES))
def test_fixed_program_is_exactly_the_fix_of_the_bad_one(bad: str, fixed: str) -> None:
    text = (CATALOG / bad).read_text()
    settings = load_settings(start=CATALOG / bad)  # a catalog folder may carry a graphmend-lint.toml
    result = fix_source(text, str(CATALOG / bad), settings, unsafe=True)
    assert result.source == (CATALOG / fixed).read_text()
    assert bad.partition("/")[0] in {d.code for d in result.applied}
    safe_only = fix_source(text, str(CATALOG / bad), settings, unsafe=False).source
    assert (safe_only == result.source) is (fixed in SAFE_FIXES)
