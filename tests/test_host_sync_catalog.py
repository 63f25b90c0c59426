"""The GM301-GM403 catalog (``rules/GM3xx``, ``rules/GM4xx``): findings and fixes, without Dynamo.

Each program's expected findings and real Dynamo breaks are listed in
:data:`CASES` rather than in comments inside the programs, because a
``fixed_*.py`` program must be exactly ``fix_source(bad_*.py)`` and would
otherwise carry stale markers. The break columns were measured with
``graphmend_lint.verify.breaks`` on torch 2.13 (CPU) and are re-checked by
``tests/test_host_sync_dynamo.py``.
"""

from __future__ import annotations

import pytest
from catalog_cases import CATALOG, Case, case, check_cases_cover_the_catalog
from catalog_cases import findings as _findings
from catalog_cases import fix_pairs as _pairs

from graphmend_lint import fix_source

CODES = ("GM301", "GM302", "GM401", "GM402", "GM403")


CASES: dict[str, Case] = {
    "GM301/bad_assert_item.py": case({(11, "GM301")}, {(11, "GB0124")}),
    "GM301/fixed_assert_item.py": case(),
    # the break is at the conversion; the slice takes a Python int and adds none (no GM402)
    "GM301/bad_slice_by_int_max.py": case({(8, "GM301")}, {(8, "GB0124")}),
    "GM301/bad_scalar_arith.py": case({(15, "GM301")}, {(15, "GB0124")}),
    "GM301/fixed_scalar_arith.py": case(),
    # The fix keeps the flag a tensor; GM101's predication then removes the branch.
    "GM301/bad_branch_flag.py": case({(18, "GM301")}, {(18, "GB0124")}),
    "GM301/fixed_branch_flag.py": case(),
    "GM301/bad_flag_passed_on.py": case({(31, "GM301")}, {(31, "GB0124")}),
    "GM301/neg_item_outside_scope.py": case(),
    # capture_scalar_outputs is on: the conversion traces, the branch on it breaks
    "GM301/bad_captured_branch.py": case({(16, "GM301")}, {(16, "GB0170")}),
    "GM301/neg_captured_arithmetic.py": case(),
    # capture_scalar_outputs is on: `chunk` guards on the captured count and breaks (no GB id), the size traces
    "GM301/bad_captured_chunk.py": case({(15, "GM301")}, {(15, None)}),
    "GM301/bad_data_size.py": case({(9, "GM301")}, {(9, "GB0033")}),
    # torch_scatter's size list, filled in with a 0-d tensor: converted at the `torch.zeros` that reads it
    "GM301/bad_scatter_size_list.py": case({(15, "GM301")}, {(15, "GB0033")}),
    # range() over a 0-d tensor: no rule for the builtin, the list comprehension's frame runs eagerly
    "GM301/bad_range_over_tensor.py": case({(18, "GM301")}, {(18, "GB0059")}, frame_skipped=True),
    # nothing needs the size as a number: the capture switch traces it (unsafe)
    "GM301/bad_duration_padded_buffer.py": case({(14, "GM301")}, {(14, "GB0033")}),
    "GM301/fixed_duration_padded_buffer.py": case(),
    # sizes from 0-d tensors of Python numbers and shapes: Dynamo knows their values
    "GM301/neg_scalar_built_size.py": case(),
    # `math` converts a tensor argument to a Python number: each call breaks, also under capture_scalar_outputs
    "GM301/bad_math_on_tensor.py": case({(17, "GM301"), (18, "GM301")}, {(17, "GB0033"), (18, "GB0033")}),
    # PointPillars' linspace steps from a tensor of the map size, Qwen2.5-Omni's list repeated a tensor number of times
    "GM301/bad_repeated_chunk_lengths.py": case({(18, "GM301"), (20, "GM301")}, {(18, "GB0033"), (20, "GB0033")}),
    # Beta-VAE's capacity: a buffer's element beside the bound `0` takes the scalar overload; two tensor bounds do not
    "GM301/bad_mixed_clamp_bounds.py": case({(18, "GM301")}, {(18, "GB0033")}),
    # `%`-formatting a tensor: GB0033 (`%d`), GB0208 (`%s`), GB0088 (a tuple); each helper's rest runs eagerly
    "GM301/bad_percent_format.py": case(
        {(14, "GM301"), (18, "GM301"), (22, "GM301")},
        {(14, "GB0033"), (14, "GB0208"), (18, "GB0208"), (22, "GB0088")},
        frame_skipped=True,
    ),
    # `str()` of a tensor as a cache key: no rule for it, in either mode
    "GM301/bad_str_cache_key.py": case({(18, "GM301")}, {(18, "GB0059")}),
    # `operator.index` of a tensor reads it back like `int(t)`; of a shape it is plain Python
    "GM301/bad_operator_index.py": case({(15, "GM301")}, {(15, "GB0124")}),
    "GM302/bad_tolist.py": case({(13, "GM302")}, {(13, "GB0109")}),
    "GM302/bad_numpy_branch.py": case({(18, "GM302"), (20, "GM302")}, {(18, "GB0170"), (20, "GB0033")}),
    "GM302/neg_numpy_traced.py": case(),
    # the router's `.tolist()` sizes cross two calls and are only split sizes: the capture switch (unsafe)
    "GM302/bad_router_split_sizes.py": case({(40, "GM302")}, {(40, "GB0033")}),
    "GM302/fixed_router_split_sizes.py": case(),
    # the experts branch on a size: under the switch the break would move there (Eq(u0, 0) guard, measured)
    "GM302/bad_router_sizes_branch.py": case({(42, "GM302")}, {(42, "GB0033")}),
    "GM401/bad_masked_sum.py": case({(15, "GM401")}, {(15, "GB0036")}),
    "GM401/fixed_masked_sum.py": case(),
    "GM401/bad_masked_mean.py": case({(7, "GM401")}, {(7, "GB0036")}),
    "GM401/fixed_masked_mean.py": case(),
    "GM401/bad_masked_max.py": case({(19, "GM401")}, {(19, "GB0036")}),
    "GM401/fixed_masked_max.py": case(),
    # Dynamo stops at the first break in the loop and runs the frame eagerly,
    # so the `where` on line 24 is never reached by the tracer.
    "GM401/bad_expert_dispatch.py": case(
        {(22, "GM401"), (24, "GM401"), (24, "GM301"), (25, "GM301")},
        {(22, "GB0036"), (24, "GB0124")},
        frame_skipped=True,
    ),
    # transformers 5.x's experts loop: the sentinel `if` on line 34 breaks too (GM101's, not listed here);
    # the `where` on line 36 runs in the skipped resume frame, so Dynamo never logs it.
    "GM401/bad_moe_experts.py": case(
        {(30, "GM401"), (36, "GM401")}, {(30, "GB0036"), (34, "GB0170")}, frame_skipped=True
    ),
    "GM401/fixed_moe_experts.py": case(),
    # gpt-oss's spelling of the same loop (`@`, biases, a gate helper): the same two breaks
    "GM401/bad_moe_biased_experts.py": case(
        {(41, "GM401"), (47, "GM401")}, {(41, "GB0036"), (45, "GB0170")}, frame_skipped=True
    ),
    "GM401/fixed_moe_biased_experts.py": case(),
    "GM401/neg_masked_write.py": case(),
    "GM401/bad_masked_layernorm.py": case({(18, "GM401"), (20, "GM401")}, {(18, "GB0036"), (20, "GB0036")}),
    "GM401/fixed_masked_layernorm.py": case(),
    # the masked reads inside a multi-line tensor-method call: the resumed call breaks again where it starts
    "GM401/bad_masked_scatter_args.py": case(
        {(18, "GM401"), (20, "GM401"), (22, "GM401"), (24, "GM401")},
        {(18, "GB0007"), (20, "GB0036"), (22, "GB0007"), (24, "GB0036")},
    ),
    "GM401/bad_np_unique.py": case({(8, "GM401")}, {(8, "GB0036")}),
    # torchmd-net: a mask over the columns of an untyped edge list (only an array takes `[:, mask]`)
    "GM401/bad_edge_mask_columns.py": case({(14, "GM401")}, {(14, "GB0036")}),
    # PyTorch Geometric: the graph batch's `train_mask` attribute selects the training nodes
    "GM401/bad_graph_train_mask.py": case({(25, "GM401")}, {(25, "GB0036")}),
    # no `num_classes`: the width comes from the data (GB0246); advice only, the switch does not trace it
    "GM401/bad_one_hot_width.py": case({(13, "GM401")}, {(13, "GB0246")}),
    # the CTC loss, as an nn.CTCLoss module kept on self and as F.ctc_loss (GB0036)
    "GM401/bad_ctc_loss.py": case({(22, "GM401"), (23, "GM401")}, {(22, "GB0036"), (23, "GB0036")}),
    # an unbound method, an aten overload, `where(condition=)` and a list of bools: the switch traces all four
    "GM401/bad_operator_spellings.py": case(
        {(11, "GM401"), (12, "GM401"), (13, "GM401"), (14, "GM401")},
        {(11, "GB0036"), (12, "GB0036"), (13, "GB0036"), (14, "GB0036")},
    ),
    "GM401/fixed_operator_spellings.py": case(),
    "GM401/neg_static_sizes.py": case(),
    # the hit matrix is split into its rows, one per dimension: a static count, so the capture switch traces it
    "GM401/bad_keypoint_rows.py": case({(14, "GM401"), (19, "GM401")}, {(14, "GB0036"), (19, "GB0036")}),
    "GM401/fixed_keypoint_rows.py": case(),
    # capture_dynamic_output_shape_ops is on: nonzero traces, the branch on its size breaks
    "GM401/bad_captured_size_branch.py": case({(15, "GM401")}, {(15, "GB0170")}),
    "GM402/bad_slice_by_count.py": case({(18, "GM402")}, {(18, "GB0124")}),
    # the element of a tensor packed from `self.hidden_size`, passed to a function that slices with it;
    # Dynamo logs the first slice, then runs the rest of both frames eagerly
    "GM402/bad_packed_channels.py": case({(13, "GM402"), (14, "GM402")}, {(13, "GB0124")}, frame_skipped=True),
    "GM402/fixed_packed_channels.py": case(),
    "GM402/neg_shape_slice.py": case(),
    # The `if` on the traced lcm breaks (GB0170), and so does F.pad with the
    # tensor-valued padding it computes (GB0033); GM403 reports the first, where
    # Python first takes the value, and its fix rewrites the source.
    "GM403/bad_np_lcm.py": case({(23, "GM403")}, {(23, "GB0170"), (24, "GB0033")}),
    "GM403/fixed_np_lcm.py": case(),
    "GM403/bad_np_sum.py": case({(14, "GM403")}, {(14, "GB0170")}),
    "GM403/fixed_np_sum.py": case(),
    "GM403/neg_np_outside_scope.py": case(),
    # the results only feed tensor arithmetic and a tensor method: they stay in the graph
    "GM403/neg_np_feeds_tensors.py": case(),
    # BigBird's plan: np.sum over a list sizes np.zeros (GB0033)
    "GM403/bad_block_plan.py": case({(19, "GM403")}, {(19, "GB0033")}),
    # NumPy scalars kept on the module: a size (GB0033) and a comprehension's test (GB0170); a product and a
    # slice bound trace
    "GM403/bad_numpy_module_scalars.py": case(
        {(21, "GM403"), (22, "GM403")}, {(21, "GB0033"), (22, "GB0170")}, frame_skipped=True
    ),
    "GM403/neg_numpy_module_scale.py": case(),
    "GM403/fixed_block_plan.py": case(),
    # an array a helper receives (EDM2's constant()): its dtype is the first member Dynamo cannot model, and
    # Dynamo runs the helper's resumed frame eagerly
    "GM403/bad_ndarray_cache_key.py": case({(14, "GM403")}, {(14, "GB0157")}, frame_skipped=True),
    # VAR: a NumPy position forced into Python picks a layer (GB0033)
    "GM403/bad_numpy_position_item.py": case({(18, "GM403")}, {(18, "GB0033")}),
    # Perceiver's flattening: np.prod over a shape as a torch size, stored in a name or inline (GB0033)
    "GM403/bad_np_prod_reshape.py": case({(18, "GM403"), (20, "GM403")}, {(18, "GB0033"), (20, "GB0033")}),
    "GM403/fixed_np_prod_reshape.py": case(),
    # nnU-Net's top-k loss: np.prod over a shape, through arithmetic into int() (GB0033), and np.sum over a
    # shape slice into range() in a comprehension (GB0059)
    "GM403/bad_np_prod_voxel_count.py": case({(23, "GM403"), (25, "GM403")}, {(23, "GB0033"), (25, "GB0059")}),
}


def fix_pairs() -> list[tuple[str, str]]:
    """``(bad, fixed)`` for every bad program that has a fixed twin."""
    return _pairs(CODES)


def findings(name: str) -> set[tuple[int, str]]:
    return _findings(name, CODES)


def test_the_cases_cover_the_catalog() -> None:
    check_cases_cover_the_catalog(CODES, CASES)


@pytest.mark.parametrize("name", sorted(CASES))
def test_findings_are_exactly_the_expected_lines(name: str) -> None:
    assert findings(name) == set(CASES[name].findings)


@pytest.mark.parametrize(("bad", "fixed"), fix_pairs())
def test_fixed_program_is_exactly_the_fix_of_the_bad_one(bad: str, fixed: str) -> None:
    result = fix_source((CATALOG / bad).read_text(), str(CATALOG / bad), unsafe=True)
    assert result.source == (CATALOG / fixed).read_text()
    assert bad.partition("/")[0] in {d.code for d in result.applied}


@pytest.mark.parametrize(("bad", "fixed"), fix_pairs())
def test_fix_needs_the_documented_safety(bad: str, fixed: str) -> None:
    """Unsafe catalog fixes are not applied by a plain ``--fix``; the safe ones (np.sum, the packed integer) are."""
    text = (CATALOG / bad).read_text()
    safe_only = fix_source(text, str(CATALOG / bad), unsafe=False).source
    expected_safe = fixed in {"GM403/fixed_np_sum.py", "GM402/fixed_packed_channels.py"}
    assert (safe_only == (CATALOG / fixed).read_text()) is expected_safe
