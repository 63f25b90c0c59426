"""The Hugging Face adapter in process: tiny configs, model classes, inputs by modality."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

import torch  # noqa: E402

from graphmend_lint.verify.hf import build_hf_workload, small_overrides, tiny_config  # noqa: E402
from graphmend_lint.verify.targets import HfOptions, TargetError  # noqa: E402


def test_unknown_model_type_names_the_transformers_version():
    with pytest.raises(TargetError, match=f"unknown to transformers {transformers.__version__}"):
        tiny_config("no-such-model", {})


def test_unknown_model_class():
    with pytest.raises(TargetError, match="has no class 'NoSuchModel'"):
        build_hf_workload("bert", "NoSuchModel", HfOptions())


def test_small_sizes_only_where_they_fit():
    small = small_overrides({"hidden_size": 768, "num_heads": [3, 6], "vocab_size": 32064, "pad_token_id": 32000,
                             "text_config": {"hidden_size": 512}, "flag": True})
    assert small["hidden_size"] == 32 and "num_heads" not in small  # a list per stage keeps its default
    assert small["vocab_size"] == 32001  # the pad id stays valid
    assert small["text_config"] == {"hidden_size": 32}


def test_overrides_go_through_the_config_constructor():
    rope = {"rope_type": "longrope", "short_factor": [1.0] * 4, "long_factor": [1.0, 2.0, 3.0, 4.0],
            "original_max_position_embeddings": 8}
    config = tiny_config("phi3", {"rope_scaling": rope})
    assert config.rope_parameters["rope_type"] == "longrope"  # transformers 5 renames rope_scaling
    assert (config.hidden_size, config.num_hidden_layers, config.num_attention_heads) == (32, 2, 4)


@pytest.mark.parametrize(
    ("model_type", "model_class", "expected_inputs"),
    [
        ("bert", None, {"input_ids", "attention_mask"}),
        ("gpt2", "GPT2LMHeadModel", {"input_ids", "attention_mask"}),
        ("vit", None, {"pixel_values"}),
        ("wav2vec2", None, {"input_values"}),
        ("whisper", None, {"input_features", "decoder_input_ids"}),
        ("clip", None, {"input_ids", "attention_mask", "pixel_values"}),
        ("gptj", None, {"input_ids", "attention_mask"}),  # rotary_dim must fit the tiny head
        ("gpt_neo", None, {"input_ids", "attention_mask"}),  # attention_types must cover the 2 layers
    ],
)
def test_builds_and_runs(model_type, model_class, expected_inputs):
    torch.manual_seed(0)
    workload = build_hf_workload(model_type, model_class, HfOptions(seq_len=5))
    model = workload.callable
    assert not model.training
    assert sum(p.numel() for p in model.parameters()) < 2_000_000
    ((args, kwargs),) = workload.inputs
    assert args == () and set(kwargs) == expected_inputs
    if "input_ids" in kwargs:
        assert kwargs["input_ids"].shape == (1, 5)
        pad = getattr(model.config, "pad_token_id", None)
        assert pad is None or pad not in kwargs["input_ids"].flatten().tolist()
    with torch.no_grad():
        model(**kwargs)


def test_inputs_are_reproducible():
    first = build_hf_workload("bert", None, HfOptions()).inputs[0][1]["input_ids"]
    second = build_hf_workload("bert", None, HfOptions()).inputs[0][1]["input_ids"]
    assert torch.equal(first, second)
