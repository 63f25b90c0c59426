"""The built-in Hugging Face adapter: a tiny random model of any type, plus dummy inputs.

``hf:<model_type>[:<ModelClass>]`` builds ``AutoConfig.for_model(model_type,
...)`` with small sizes (hidden 32, 2 layers, 4 heads, 2 key/value heads),
instantiates ``ModelClass`` (default ``AutoModel``) with random weights in
eval mode, and makes inputs by the model's ``main_input_name``. Nothing is
downloaded: the arm runs with ``HF_HUB_OFFLINE=1``.

Small sizes are set only for keys the model's default config has, so one
table serves every architecture. ``--hf-config`` values are passed to the
config constructor too, so a config's own conversions run (in transformers 5
``rope_scaling=`` becomes ``rope_parameters``).
"""

from __future__ import annotations

from typing import Any

from graphmend_lint.verify.workload import HfOptions, TargetError, Workload

HIDDEN = 32
HEADS = 4
#: Size keys and their tiny values; each is set only where the config has the key.
SMALL_CONFIG: dict[str, Any] = {
    **dict.fromkeys(("hidden_size", "d_model", "n_embd", "embed_dim", "embedding_size", "output_hidden_size"), HIDDEN),
    **dict.fromkeys(("intermediate_size", "encoder_ffn_dim", "decoder_ffn_dim", "d_ff", "ffn_dim"), 2 * HIDDEN),
    **dict.fromkeys(("num_hidden_layers", "encoder_layers", "decoder_layers", "num_layers", "n_layer"), 2),
    "num_decoder_layers": 2,
    **dict.fromkeys(
        ("num_attention_heads", "encoder_attention_heads", "decoder_attention_heads", "num_heads", "n_head"), HEADS
    ),
    "num_key_value_heads": 2,
    "head_dim": HIDDEN // HEADS,
    "rotary_dim": HIDDEN // HEADS,  # codegen, gptj: rotary dims must fit in a head
    "d_kv": HIDDEN // HEADS,
    # longformer: a small even window, so that short inputs still span several windows
    "attention_window": 4,
    "image_size": 32,
    "patch_size": 8,
    "max_source_positions": 16,  # whisper: the encoder then wants 32 mel frames
}
#: List-valued sizes (one entry per stage), shrunk element-wise: wav2vec2's conv feature extractor.
SMALL_PER_STAGE: dict[str, int] = {"conv_dim": HIDDEN}
#: Lists whose entries must sum to the hidden size (reformer's axial position embeddings).
SUMS_TO_HIDDEN = ("axial_pos_embds_dim",)
#: Lists with one entry per layer, cut to the tiny layer count (reformer's ``attn_layers``
#: sets its number of layers).
PER_LAYER = ("attn_layers",)
MIN_VOCAB = 256
WAVEFORM_SAMPLES = 16_000
SEED = 0


def build_hf_workload(model_type: str, model_class: str | None, options: HfOptions) -> Workload:
    """A tiny random ``model_type`` model and one input set for it."""
    import torch
    import transformers

    config = tiny_config(model_type, options.overrides_for(model_type))
    cls = _model_class(model_class)
    try:
        if hasattr(cls, "from_config"):  # the Auto* classes
            model = cls.from_config(config)
        else:
            model = cls._from_config(config)
    except (ValueError, KeyError) as error:
        raise TargetError(f"hf:{model_type}: cannot build {cls.__name__} for this config: {error}") from error
    if not isinstance(model, transformers.PreTrainedModel):
        raise TargetError(f"hf:{model_type}: {cls.__name__} did not build a PreTrainedModel")
    model.eval()
    generator = torch.Generator().manual_seed(SEED)
    return Workload(model, [((), dummy_inputs(model, options.seq_len, generator))])


def tiny_config(model_type: str, overrides: dict[str, Any]) -> Any:
    """``AutoConfig.for_model`` with :data:`SMALL_CONFIG` where it applies, then ``overrides``."""
    from transformers import CONFIG_MAPPING, AutoConfig

    if model_type not in CONFIG_MAPPING:
        import transformers

        raise TargetError(f"hf:{model_type}: model type unknown to transformers {transformers.__version__}")
    small = small_overrides(CONFIG_MAPPING[model_type]().to_dict())
    try:
        return AutoConfig.for_model(model_type, **{**small, **overrides})
    except (ValueError, TypeError, KeyError) as error:
        raise TargetError(f"hf:{model_type}: invalid config: {error}") from error


def small_overrides(defaults: dict[str, Any]) -> dict[str, Any]:
    """The :data:`SMALL_CONFIG` values that fit a config's defaults, sub-configs included.

    A key is set only where the default is an int too (swin's ``num_heads``
    is a list per stage and keeps its default); :data:`SMALL_PER_STAGE` keys
    are lists shrunk element-wise. Composite models (CLIP,
    LLaVA...) get their ``*_config`` dicts shrunk the same way.
    """
    small: dict[str, Any] = {
        key: value
        for key, value in SMALL_CONFIG.items()
        if isinstance(defaults.get(key), int) and not isinstance(defaults.get(key), bool)
    }
    if isinstance(defaults.get("attention_types"), list) and defaults["attention_types"]:
        # gpt_neo: [[pattern, repeats]] must cover exactly the (smaller) number of layers
        pattern = defaults["attention_types"][0][0]
        small["attention_types"] = [[pattern, max(1, SMALL_CONFIG["num_layers"] // len(pattern))]]
    for key, value in SMALL_PER_STAGE.items():
        if isinstance(defaults.get(key), list):
            small[key] = [value] * len(defaults[key])
    for key in SUMS_TO_HIDDEN:
        if isinstance(defaults.get(key), (list, tuple)) and defaults[key]:
            parts = len(defaults[key])
            small[key] = [HIDDEN // parts] * (parts - 1) + [HIDDEN - HIDDEN // parts * (parts - 1)]
    for key in PER_LAYER:
        if isinstance(defaults.get(key), (list, tuple)) and len(defaults[key]) > SMALL_CONFIG["num_layers"]:
            small[key] = list(defaults[key][: SMALL_CONFIG["num_layers"]])
    if isinstance(defaults.get("vocab_size"), int):
        # Keep special token ids valid (phi3 pads with 32000) instead of changing them.
        token_ids = [v for k, v in defaults.items() if k.endswith("token_id") and isinstance(v, int)]
        small["vocab_size"] = max([MIN_VOCAB, *(i + 1 for i in token_ids)])
    for key, value in defaults.items():
        if key.endswith("_config") and isinstance(value, dict):
            small[key] = {**value, **small_overrides(value)}
    return small


def _model_class(name: str | None) -> Any:
    import transformers

    if name is None:
        return transformers.AutoModel
    cls = getattr(transformers, name, None)
    if cls is None:
        raise TargetError(f"transformers {transformers.__version__} has no class {name!r}")
    return cls


def _forward_parameters(model: Any) -> set[str]:
    import inspect

    return set(inspect.signature(model.forward).parameters)


def dummy_inputs(model: Any, seq_len: int, generator: Any) -> dict[str, Any]:
    """Keyword inputs by modality (text ids, pixel values, audio features or waveforms)."""
    import torch

    config = model.config
    name = model.main_input_name
    parameters = _forward_parameters(model)
    inputs: dict[str, Any] = {}
    if name == "input_ids":
        inputs["input_ids"] = _token_ids(config, (1, seq_len), generator)
        if "attention_mask" in parameters:
            inputs["attention_mask"] = torch.ones(1, seq_len, dtype=torch.long)
    elif name == "pixel_values":
        size = getattr(config, "image_size", 32)
        channels = getattr(config, "num_channels", 3)
        inputs[name] = torch.randn(1, channels, size, size, generator=generator)
    elif name == "input_features" and hasattr(config, "num_mel_bins"):
        frames = 2 * getattr(config, "max_source_positions", seq_len)
        inputs[name] = torch.randn(1, config.num_mel_bins, frames, generator=generator)
    elif name == "input_features" and hasattr(config, "input_feat_per_channel"):
        width = config.input_feat_per_channel * getattr(config, "input_channels", 1)
        inputs[name] = torch.randn(1, 4 * seq_len, width, generator=generator)
    elif name == "input_values":
        # 1 s at 16 kHz: about 49 frames after wav2vec2's conv stack, more than SpecAugment's mask length
        # (10), which training mode applies (1600 samples gave 4 frames: "mask_length has to be smaller")
        inputs[name] = torch.randn(1, WAVEFORM_SAMPLES, generator=generator)
    else:
        raise TargetError(
            f"hf:{config.model_type}: no dummy inputs for main input {name!r}; write a factory target instead"
        )
    vision = getattr(config, "vision_config", None)
    if name != "pixel_values" and "pixel_values" in parameters and vision is not None:  # text+image models
        size, channels = getattr(vision, "image_size", 32), getattr(vision, "num_channels", 3)
        inputs["pixel_values"] = torch.randn(1, channels, size, size, generator=generator)
    if getattr(config, "is_encoder_decoder", False) and "decoder_input_ids" in parameters:
        inputs["decoder_input_ids"] = _token_ids(config, (1, max(2, seq_len // 2)), generator)
    return inputs


def _token_ids(config: Any, shape: tuple[int, int], generator: Any) -> Any:
    """Random ids that avoid the special tokens, so no padding path is taken by accident."""
    import torch

    vocab = getattr(config, "vocab_size", MIN_VOCAB)
    special = {v for k, v in config.to_dict().items() if k.endswith("token_id") and isinstance(v, int)}
    allowed = torch.tensor([i for i in range(min(vocab, 4 * MIN_VOCAB)) if i not in special])
    picks = torch.randint(0, len(allowed), shape, generator=generator)
    return allowed[picks]
