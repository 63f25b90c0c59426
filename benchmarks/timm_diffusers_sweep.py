"""A quick sweep of timm and diffusers models (issue 15): logged graph breaks and ``fullgraph=True``, original code.

timm: one model per model module (family), its smallest-sounding variant
(``tiny``, ``small``, ``nano``...), built with random weights
(``pretrained=False``) at the input size of its default config, in eval mode
and in train mode (forward, then backward on the mean square of the output).
diffusers: a few models built from small configs by hand (:data:`DIFFUSERS`):
UNets, a VAE, DiT, Flux, Lumina2 (its ``.tolist()``) and the Stable
Diffusion safety checker (its ``.item()``); eval mode, plus train mode where
the model trains (not the safety checker, whose forward is ``no_grad``).

**torchvision.** The only torchvision on the package index is a CUDA build
that fails to import next to the CPU torch, and ``import timm`` imports
torchvision (``timm.layers`` for ``FrozenBatchNorm2d``, ``timm.data`` for
transforms and datasets). timm's *model* code does not call it in a forward
pass, so the timm worker puts a stub ``torchvision`` on ``sys.meta_path`` in
its own process only (:class:`TorchvisionStub`): any ``torchvision.*`` module
imports, and any name in it is a placeholder that raises when called. Nothing
is installed and the user's environment is untouched. A model whose code
really used torchvision would fail with "torchvision stub" in its skip reason.

Each library's models run in one worker process (a sweep, not the measurement
of record; Dynamo is reset before each model). Results are cached per model
under ``--cache-dir/sweep-<library>/``::

    nice -n 10 python benchmarks/timm_diffusers_sweep.py --limit 30 --json sweep.json
"""

from __future__ import annotations

import argparse
import enum
import hashlib
import importlib.abc
import importlib.machinery
import json
import platform
import subprocess
import sys
import time
import traceback
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

from verify_runs import arm_environment, markdown_table, progress

PREFERRED = ("atto", "femto", "pico", "nano", "tiny", "xxs", "xs", "small", "s", "b0", "18", "mini", "lite")


# -- torchvision stub (timm worker only) ------------------------------------------------------------


class _Placeholder(type):
    """A stand-in class for any torchvision name: its attributes are placeholders, calling it raises."""

    def __getattr__(cls, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return _placeholder(f"{cls.__name__}.{name}")

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(f"torchvision stub: {cls.__name__} is not available (see timm_diffusers_sweep.py)")


def _placeholder(name: str) -> Any:
    return _Placeholder(name, (), {})


class InterpolationMode(enum.Enum):
    """timm builds dicts keyed by these members at import time (``timm/data/transforms.py``)."""

    NEAREST = "nearest"
    NEAREST_EXACT = "nearest-exact"
    BILINEAR = "bilinear"
    BICUBIC = "bicubic"
    BOX = "box"
    HAMMING = "hamming"
    LANCZOS = "lanczos"


def _module_getattr(module: str) -> Callable[[str], Any]:
    def getattr_(name: str) -> Any:
        if name.startswith("__"):  # __file__, __spec__...: inspect and pickle probe these
            raise AttributeError(name)
        return _placeholder(f"{module}.{name}")

    return getattr_


class TorchvisionStub(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Makes ``import torchvision[.anything]`` succeed with placeholder modules, in this process only."""

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if fullname == "torchvision" or fullname.startswith("torchvision."):
            return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        return None

    def create_module(self, spec: Any) -> types.ModuleType:
        module = types.ModuleType(spec.name)
        module.__path__ = []  # a package, so that submodules import
        module.__version__ = "0.0.0+graphmend-stub"  # type: ignore[attr-defined]
        module.InterpolationMode = InterpolationMode  # type: ignore[attr-defined]
        module.__getattr__ = _module_getattr(spec.name)  # type: ignore[attr-defined]
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        return None


# -- model factories --------------------------------------------------------------------------------

Factory = Callable[[], tuple[Any, dict[str, Any]]]


def _unet2d() -> tuple[Any, dict[str, Any]]:
    import torch
    from diffusers import UNet2DModel

    model = UNet2DModel(sample_size=16, in_channels=3, out_channels=3, layers_per_block=1,
                        block_out_channels=(32, 64), norm_num_groups=8,
                        down_block_types=("DownBlock2D", "AttnDownBlock2D"), up_block_types=("AttnUpBlock2D", "UpBlock2D"))
    return model, {"sample": torch.randn(1, 3, 16, 16), "timestep": torch.tensor([10])}


def _unet2d_condition() -> tuple[Any, dict[str, Any]]:
    import torch
    from diffusers import UNet2DConditionModel

    model = UNet2DConditionModel(sample_size=16, in_channels=4, out_channels=4, layers_per_block=1,
                                 block_out_channels=(32, 64), norm_num_groups=8, cross_attention_dim=32,
                                 attention_head_dim=8, down_block_types=("CrossAttnDownBlock2D", "DownBlock2D"),
                                 up_block_types=("UpBlock2D", "CrossAttnUpBlock2D"))
    return model, {"sample": torch.randn(1, 4, 16, 16), "timestep": torch.tensor([10]),
                   "encoder_hidden_states": torch.randn(1, 7, 32)}


def _vae() -> tuple[Any, dict[str, Any]]:
    import torch
    from diffusers import AutoencoderKL

    model = AutoencoderKL(in_channels=3, out_channels=3, latent_channels=4, block_out_channels=(32, 64),
                          norm_num_groups=8, down_block_types=("DownEncoderBlock2D",) * 2,
                          up_block_types=("UpDecoderBlock2D",) * 2, sample_size=16)
    return model, {"sample": torch.randn(1, 3, 16, 16)}


def _dit() -> tuple[Any, dict[str, Any]]:
    import torch
    from diffusers import DiTTransformer2DModel

    model = DiTTransformer2DModel(num_attention_heads=2, attention_head_dim=8, in_channels=4, out_channels=8,
                                  num_layers=2, sample_size=8, patch_size=2)
    return model, {"hidden_states": torch.randn(1, 4, 8, 8), "timestep": torch.tensor([10]),
                   "class_labels": torch.tensor([1])}


def _flux() -> tuple[Any, dict[str, Any]]:
    import torch
    from diffusers import FluxTransformer2DModel

    model = FluxTransformer2DModel(patch_size=1, in_channels=4, num_layers=1, num_single_layers=1,
                                   attention_head_dim=8, num_attention_heads=2, joint_attention_dim=16,
                                   pooled_projection_dim=16, axes_dims_rope=(2, 2, 4))
    return model, {"hidden_states": torch.randn(1, 16, 4), "encoder_hidden_states": torch.randn(1, 5, 16),
                   "pooled_projections": torch.randn(1, 16), "timestep": torch.tensor([1.0]),
                   "img_ids": torch.zeros(16, 3), "txt_ids": torch.zeros(5, 3)}


def _lumina2() -> tuple[Any, dict[str, Any]]:
    import torch
    from diffusers import Lumina2Transformer2DModel

    model = Lumina2Transformer2DModel(sample_size=8, patch_size=2, in_channels=4, hidden_size=32, num_layers=2,
                                      num_refiner_layers=1, num_attention_heads=4, num_kv_heads=2, multiple_of=16,
                                      axes_dim_rope=(4, 2, 2), axes_lens=(64, 32, 32), cap_feat_dim=16)
    return model, {"hidden_states": torch.randn(1, 4, 8, 8), "timestep": torch.tensor([0.5]),
                   "encoder_hidden_states": torch.randn(1, 5, 16),
                   "encoder_attention_mask": torch.ones(1, 5, dtype=torch.bool)}


def _safety_checker() -> tuple[Any, dict[str, Any]]:
    import torch
    from diffusers.pipelines.stable_diffusion.safety_checker import StableDiffusionSafetyChecker
    from transformers import CLIPConfig

    small = {"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4}
    config = CLIPConfig(text_config=small, vision_config={**small, "image_size": 32, "patch_size": 8},
                        projection_dim=16)
    return StableDiffusionSafetyChecker(config), {"clip_input": torch.randn(1, 3, 32, 32),
                                                  "images": torch.zeros(1, 3, 8, 8)}


#: name -> (factory, whether it trains: the safety checker's forward is decorated ``@torch.no_grad``)
DIFFUSERS: dict[str, tuple[Factory, bool]] = {
    "UNet2DModel": (_unet2d, True),
    "UNet2DConditionModel": (_unet2d_condition, True),
    "AutoencoderKL": (_vae, True),
    "DiTTransformer2DModel": (_dit, True),
    "FluxTransformer2DModel": (_flux, True),
    "Lumina2Transformer2DModel": (_lumina2, True),
    "StableDiffusionSafetyChecker": (_safety_checker, False),
}


def timm_families() -> list[str]:
    """One model name per timm model module: the first name whose parts include a :data:`PREFERRED` size."""
    import timm

    chosen = []
    for module in sorted(timm.list_modules()):
        names = timm.list_models(module=module)
        if not names:
            continue

        def rank(name: str) -> tuple[int, int, str]:
            parts = name.replace("-", "_").split("_")
            sizes = [PREFERRED.index(p) for p in parts if p in PREFERRED]
            return (min(sizes) if sizes else len(PREFERRED), len(name), name)

        chosen.append(min(names, key=rank))
    return chosen


def timm_factory(name: str) -> Factory:
    def build() -> tuple[Any, dict[str, Any]]:
        import timm
        import torch

        model = timm.create_model(name, pretrained=False, num_classes=8)
        size = tuple(model.pretrained_cfg.get("input_size", (3, 224, 224)))
        return model, {"x": torch.randn(1, *size)}

    return build


# -- worker -----------------------------------------------------------------------------------------


def measure(factory: Factory, train: bool) -> dict[str, Any]:
    """Eager run (with backward in train mode), logged breaks, then ``fullgraph=True`` (eager backend)."""
    import torch

    from graphmend_lint.verify.breaks import capture_breaks_over
    from graphmend_lint.verify.training import backward_gradients

    def fresh() -> tuple[Any, dict[str, Any]]:
        torch.manual_seed(0)
        model, kwargs = factory()
        model.train(train)
        return model, kwargs

    grad_mode = torch.enable_grad if train else torch.no_grad
    phase = "factory"
    try:
        model, kwargs = fresh()
        phase = "callable"
        with grad_mode():
            value = model(**kwargs)
            if train:
                phase = "backward"
                backward_gradients(model, value)
        phase = "dynamo"
        model, kwargs = fresh()
        with grad_mode():
            report = capture_breaks_over(model, [((), kwargs)], before_each=lambda: torch.manual_seed(0))
        phase = "fullgraph"
        model, kwargs = fresh()
        torch._dynamo.reset()
        try:
            with grad_mode():
                torch.compile(model, fullgraph=True, backend="eager")(**kwargs)
            fullgraph = {"passes": True, "error": ""}
        except Exception as error:
            fullgraph = {"passes": False, "error": f"{type(error).__name__}: {str(error).strip()[:300]}"}
    except Exception as error:
        return {"error": f"{phase} failed: {type(error).__name__}: {error}"[:1500],
                "traceback": traceback.format_exc()[-2000:]}
    return {"logged_sites": report.break_count, "graph_count": report.graph_count,
            "skipped_frames": list(report.skipped_frames), "fullgraph": fullgraph,
            "breaks": [{"filename": s.filename, "line": s.line, "gb_id": s.gb_id, "reason": s.reason}
                       for s in report.sites]}


def worker(library: str, names: list[str], cache_dir: Path, timeout_s: int) -> int:
    import signal

    if library == "timm":
        sys.meta_path.insert(0, TorchvisionStub())

    def expire(signum: int, frame: Any) -> None:
        raise TimeoutError(f"timed out after {timeout_s}s")

    signal.signal(signal.SIGALRM, expire)
    for name in names:
        factory, trains = DIFFUSERS[name] if library == "diffusers" else (timm_factory(name), True)
        for mode in ("eval", "train") if trains else ("eval",):
            started = time.perf_counter()
            signal.alarm(timeout_s)
            try:
                result = measure(factory, mode == "train")
            except TimeoutError as error:
                result = {"error": str(error)}
            finally:
                signal.alarm(0)
            data = {"library": library, "model": name, "mode": mode, "host": platform.node(),
                    "seconds": round(time.perf_counter() - started, 1), **result}
            path = cache_dir / f"sweep-{library}" / f"{name}-{mode}.json"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(data, indent=1) + "\n")
            progress(f"[{library}] {name} {mode}: {data.get('logged_sites', data.get('error', '')[:120])}")
    return 0


# -- driver -----------------------------------------------------------------------------------------


def list_timm() -> list[str]:
    code = ("import sys, json; sys.path.insert(0, sys.argv[1]); import timm_diffusers_sweep as s; "
            "sys.meta_path.insert(0, s.TorchvisionStub()); print(json.dumps(s.timm_families()))")
    completed = subprocess.run([sys.executable, "-c", code, str(Path(__file__).parent)], capture_output=True,
                               text=True, check=True, env=arm_environment())
    return json.loads(completed.stdout.strip().splitlines()[-1])


def cached(cache_dir: Path, library: str, name: str) -> list[dict[str, Any]]:
    return [json.loads(p.read_text()) for p in sorted((cache_dir / f"sweep-{library}").glob(f"{name}-*.json"))
            if json.loads(p.read_text()).get("host") == platform.node()]


def rows(results: list[dict[str, Any]]) -> list[list[str]]:
    out = []
    for r in results:
        if "error" in r:
            out.append([r["library"], r["model"], r["mode"], "-", "-", "skipped: " + r["error"][:100], "-"])
            continue
        sites = "; ".join(f"{Path(b['filename']).name}:{b['line']} {b['gb_id']}" for b in r["breaks"]) or "-"
        fullgraph = "passes" if r["fullgraph"]["passes"] else "fails"
        out.append([r["library"], r["model"], r["mode"], str(r["logged_sites"]), fullgraph, sites,
                    str(r["seconds"])])
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worker", nargs="+", metavar=("LIBRARY", "NAME"), help=argparse.SUPPRESS)
    parser.add_argument("--library", choices=("timm", "diffusers", "both"), default="both")
    parser.add_argument("--limit", type=int, default=30, help="timm families, in a fixed random order (default 30)")
    parser.add_argument("--cache-dir", type=Path, default=Path(".graphmend_census"))
    parser.add_argument("--timeout", type=int, default=240, help="seconds per model and mode (default 240)")
    parser.add_argument("--json", type=Path)
    options = parser.parse_args(argv)
    if options.worker:
        return worker(options.worker[0], options.worker[1:], options.cache_dir, options.timeout)
    plan = []
    if options.library in ("diffusers", "both"):
        plan.append(("diffusers", list(DIFFUSERS)))
    if options.library in ("timm", "both"):
        families = sorted(list_timm(), key=lambda n: hashlib.sha256(n.encode()).hexdigest())[: options.limit]
        plan.append(("timm", families))
    results = []
    for library, names in plan:
        todo = [n for n in names if not cached(options.cache_dir, library, n)]
        if todo:
            subprocess.run([sys.executable, __file__, "--worker", library, *todo, "--cache-dir", str(options.cache_dir),
                            "--timeout", str(options.timeout)], env=arm_environment(), check=False)
        for name in names:
            results.extend(cached(options.cache_dir, library, name))
    print(markdown_table(("library", "model", "mode", "logged sites", "fullgraph", "sites", "s"), rows(results)))
    if options.json:
        options.json.write_text(json.dumps(results, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
