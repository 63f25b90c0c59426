"""LayerDrop in train mode: GM101's fix on every transformers model type that drops layers.

Each type is built tiny (random weights, LayerDrop 0.5 in every config field that
holds it) and run by ``graphmend-lint verify hf:<type> --train --unsafe-fixes``:
``model.train()``, forward and backward, original against fixed. The table gives
all logged break sites before -> after (every rule's fixes), the LayerDrop sites
before (GB0170 lines at or just after a ``torch.rand([])`` draw) -> every GB0170
site after (the fixed source is in memory only, so its lines cannot be read
back; a LayerDrop the fix declined is one of them), whether the eager outputs
and gradients are equal, and ``fullgraph=True`` before -> after. Runs are
cached per type under ``--cache-dir`` (resumable)::

    nice -n 10 python benchmarks/layerdrop_train.py --cache-dir .layerdrop-cache > layerdrop.md
"""

from __future__ import annotations

import argparse
import json
import linecache
import sys
from pathlib import Path
from typing import Any

from verify_runs import cached_verify, markdown_table, progress, yes_no

#: Model types whose forward drops layers with ``torch.rand([])`` (transformers 5.23), with the class to build
#: where ``AutoModel`` does not map the config, and the extra verify options a type needs: the module to fix
#: where the type's name is not its package's (``data2vec-audio`` lives in ``models/data2vec``).
TYPES: dict[str, tuple[str, ...]] = {
    "bart": (), "mbart": (), "plbart": (), "pegasus": (), "marian": (), "m2m_100": (), "blenderbot": (),
    "whisper": (), "opt": (), "biogpt": (), "xglm": (), "nllb-moe": (), "led": (), "pegasus_x": (), "mvp": (),
    "fsmt": (), "bigbird_pegasus": (), "trocr:TrOCRForCausalLM": (), "flaubert": (),
    "wav2vec2": (), "hubert": (), "wavlm": (), "unispeech": (), "unispeech-sat": (), "sew": (),
    "data2vec-audio": ("--scope-module", "transformers.models.data2vec.modeling_data2vec_audio"),
    "wav2vec2-conformer": (), "wav2vec2-bert": (), "speecht5": (),
    "qwen2_audio_encoder": ("--scope-module", "transformers.models.qwen2_audio.modeling_qwen2_audio"),
}  # fmt: skip
LAYERDROP_FIELDS = ("layerdrop", "encoder_layerdrop", "decoder_layerdrop", "speech_encoder_layerdrop")


def arguments(extra: tuple[str, ...]) -> list[str]:
    options = ["--train", *extra]
    for field in LAYERDROP_FIELDS:
        options += ["--hf-config", f"{field}=0.5"]
    return options


def layerdrop_sites(arm: dict[str, Any]) -> int:
    """Logged GB0170 sites of the original source at, or up to two lines after, a ``torch.rand([])`` draw."""
    return sum(
        1
        for site in arm["breaks"]
        if site["gb_id"] == "GB0170"
        and any("torch.rand([])" in linecache.getline(site["filename"], site["line"] - back) for back in (0, 1, 2))
    )


def row(target: str, result: dict[str, Any] | None) -> list[str]:
    if result is None or result.get("original") is None or result.get("fixed") is None:
        detail = (result or {}).get("detail", "no result")
        return [target, "-", "-", "-", "-", f"not measured: {detail[:80]}"]
    before, after = result["original"], result["fixed"]
    fullgraph = [yes_no(arm["fullgraph"]["passes"]) if arm.get("fullgraph") else "-" for arm in (before, after)]
    return [
        target,
        f"{before['logged_sites']} -> {after['logged_sites']}",
        f"{layerdrop_sites(before)} -> {sum(1 for site in after['breaks'] if site['gb_id'] == 'GB0170')}",
        f"{yes_no(result['outputs_equal'])} / {yes_no(result.get('gradients_equal'))}",
        f"{fullgraph[0]} -> {fullgraph[1]}",
        result["status"],
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache-dir", type=Path, default=None, help="keep each type's verify JSON here (resumable)")
    parser.add_argument("--only", nargs="*", help="these model types only")
    parser.add_argument("--timeout", type=float, default=900, help="seconds per type")
    parser.add_argument("--python", default=sys.executable, help="interpreter whose torch/transformers to measure")
    parser.add_argument("--json", type=Path, default=None, help="also write each type's verify result here")
    options = parser.parse_args(argv)
    rows, results = [], {}
    for target, extra in TYPES.items():
        if options.only and target.split(":")[0] not in options.only:
            continue
        cache = options.cache_dir / f"{target.replace(':', '_')}.json" if options.cache_dir else None
        run, cached = cached_verify(cache, options.python, f"hf:{target}", arguments(extra), options.timeout)
        progress(f"hf:{target}: {'cached' if cached else f'{run.seconds:.0f}s'}")
        rows.append(row(target, run.result))
        results[target] = run.result
    if options.json is not None:
        options.json.write_text(json.dumps(results, indent=1) + "\n")
    header = ["type", "logged sites", "LayerDrop -> GB0170 sites", "outputs / grads equal", "fullgraph", "verify"]
    print(markdown_table(header, rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
