"""TabPFN attention dispatch probed per call inside the compiled region: a `functools.cache`d lazy `from flash_attn_interface import ...` (ImportError -> None), a Hopper check, MPS/MLX gates, then chunked SDPA under `sdpa_kernel`.

Source: https://github.com/PriorLabs/TabPFN/pull/1166
(the test added there fails on the code before PriorLabs/TabPFN#1165 with
"graph breaks inside tabpfn code: ['fa3_backend.py::_load_fa3_func']").
Code as of PriorLabs/TabPFN@f9020879^ (the parent of #1165):
src/tabpfn/architectures/shared/fa3_backend.py (_load_fa3_func,
is_fa3_importable, _is_hopper, is_fa3_eligible, is_fa3_preferred,
fa3_attn_func), scaled_dot_product_attention.py (is_torch_mps_preferred and
scaled_dot_product_attention: shape asserts with f-string messages, the
backend gates, GQA handling, the CUDA grid chunking loop under
`sdpa_kernel`), mlx_backend.py (module-level optional import,
is_eligible_for_mlx, is_mlx_preferred) and attention_gqa_check.py.
Simplified: the model around it is a single self-attention layer compiled on
its own (TabPFN compiles each stage with `enable_torch_compile`); the MPS
padding helper and the MLX conversion are left out (their gates are false
on CPU); the module-level `os.environ["MLX_ENABLE_TF32"]` write is dropped.
"""
from __future__ import annotations

import functools
from collections.abc import Callable

import torch
from torch import nn
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.torch_version import TorchVersion

try:
    import mlx.core as mx
except ImportError:
    mx = None

_HOPPER_COMPUTE_CAPABILITY_MAJOR = 9
_FA3_SUPPORTED_HEAD_DIMS = frozenset({64, 96, 128, 192, 256})
_FA3_MIN_SEQLEN_FOR_SPEEDUP = 10_000

_SDPA_BACKENDS = [
    SDPBackend.FLASH_ATTENTION,
    SDPBackend.EFFICIENT_ATTENTION,
    SDPBackend.CUDNN_ATTENTION,
    SDPBackend.MATH,
]


@functools.cache
def _load_fa3_func() -> Callable | None:
    """Lazily import ``flash_attn_interface.flash_attn_func``; ``None`` if missing."""
    try:
        from flash_attn_interface import (  # type: ignore[import-not-found]  # noqa: PLC0415
            flash_attn_func,
        )
    except ImportError:
        return None
    return flash_attn_func


def is_fa3_importable() -> bool:
    """True iff the FA3 Hopper Python package (``flash_attn_interface``) imports."""
    return _load_fa3_func() is not None


@functools.cache
def _is_hopper(device: torch.device) -> bool:
    """True iff ``device`` is an Nvidia Hopper GPU (compute capability 9.x)."""
    if torch.version.hip is not None:
        return False
    if not torch.cuda.is_available() or device.type != "cuda":
        return False
    cap = torch.cuda.get_device_capability(device)
    return cap[0] == _HOPPER_COMPUTE_CAPABILITY_MAJOR


def is_fa3_eligible(q: torch.Tensor) -> bool:
    """True iff FA3 can serve this attention call (capability gate, not perf)."""
    head_dim = q.shape[-1]
    return (
        is_fa3_importable()
        and q.is_cuda
        and _is_hopper(q.device)
        and q.dtype in (torch.float16, torch.bfloat16)
        and head_dim in _FA3_SUPPORTED_HEAD_DIMS
    )


def is_fa3_preferred(q: torch.Tensor, k: torch.Tensor) -> bool:
    """True iff FA3 is eligible and past the speedup threshold."""
    max_seq_len = max(q.shape[1], k.shape[1])
    return is_fa3_eligible(q) and max_seq_len >= _FA3_MIN_SEQLEN_FOR_SPEEDUP


def fa3_attn_func(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """Call ``flash_attn_func`` with the v3 attention layout (B, S, H, D)."""
    fn = _load_fa3_func()
    if fn is None:
        raise RuntimeError(
            "FA3 path requested but flash_attn_interface is not importable; "
            "see fa3_setup.md (next to this file)."
        )
    return fn(q, k, v)


def is_eligible_for_mlx(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> bool:
    """True iff MLX can serve this attention call (capability gate, not perf)."""
    head_dim = q.shape[-1]
    _DTYPES = (torch.float16, torch.bfloat16, torch.float32)
    return (
        mx is not None
        and (q.is_mps and k.is_mps and v.is_mps)
        and not (q.requires_grad or k.requires_grad or v.requires_grad)
        and (q.dtype in _DTYPES and k.dtype in _DTYPES and v.dtype in _DTYPES)
        and head_dim <= 128
    )


def is_mlx_preferred(q_BHSD: torch.Tensor, k_BJSD: torch.Tensor, v_BJSD: torch.Tensor) -> bool:
    """True iff MLX is preferred for this attention call."""
    return is_eligible_for_mlx(q_BHSD, k_BJSD, v_BJSD) and k_BJSD.shape[2] >= 128


@functools.cache
def gqa_is_supported() -> bool:
    """Check if PyTorch's scaled_dot_product_attention supports enable_gqa parameter."""
    if not torch.cuda.is_available():
        return False

    # torch.__version__ supports string comparison.
    has_enable_gqa = torch.__version__ >= "2.5"
    if not has_enable_gqa:
        return False

    device = torch.cuda.current_device()
    nvidia_compute_capability = torch.cuda.get_device_capability(device)
    return nvidia_compute_capability[0] >= 8


def is_torch_mps_preferred(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> bool:
    """True iff PyTorch's MPS SDPA is preferred for this attention call."""
    _DTYPES = (torch.float16, torch.bfloat16, torch.float32)
    return (
        torch.__version__ >= TorchVersion("2.13.0.dev20260510")
        and (q.is_mps and k.is_mps and v.is_mps)
        and (q.dtype in _DTYPES and k.dtype in _DTYPES and v.dtype in _DTYPES)
    )


def scaled_dot_product_attention(q_BSHD, k_BSJD, v_BSJD, _backends_override=None):
    """Scaled dot-product, optimized for various scenarios."""
    msg = "SDPA expects (B, S, H, D); got tensor of shape"
    assert q_BSHD.dim() == 4, f"{msg} q:{tuple(q_BSHD.shape)}"
    assert k_BSJD.dim() == 4, f"{msg} k:{tuple(k_BSJD.shape)}"
    assert v_BSJD.dim() == 4, f"{msg} v:{tuple(v_BSJD.shape)}"

    if is_fa3_preferred(q_BSHD, k_BSJD):
        return fa3_attn_func(q_BSHD.contiguous(), k_BSJD.contiguous(), v_BSJD.contiguous())

    q_BHSD = q_BSHD.permute(0, 2, 1, 3)
    k_BJSD = k_BSJD.permute(0, 2, 1, 3)
    v_BJSD = v_BSJD.permute(0, 2, 1, 3)
    num_q_heads = q_BHSD.shape[-3]
    num_kv_heads = k_BJSD.shape[-3]

    if is_torch_mps_preferred(q_BHSD, k_BJSD, v_BJSD):
        raise NotImplementedError("MPS path not part of this program")
    if is_mlx_preferred(q_BHSD, k_BJSD, v_BJSD):
        raise NotImplementedError("MLX path not part of this program")

    dtype_supports_gqa = q_BHSD.dtype in {torch.float16, torch.bfloat16}
    if num_q_heads == num_kv_heads:
        keys = k_BJSD
        values = v_BJSD
        enable_gqa = {}
    elif gqa_is_supported() and dtype_supports_gqa:
        keys = k_BJSD
        values = v_BJSD
        enable_gqa = {"enable_gqa": True}
    else:
        repeat = num_q_heads // num_kv_heads
        keys = k_BJSD.repeat_interleave(repeat, dim=-3)
        values = v_BJSD.repeat_interleave(repeat, dim=-3)
        enable_gqa = {}

    backends = _backends_override if _backends_override is not None else _SDPA_BACKENDS

    num_parallel_calls = q_BHSD.shape[:2].numel()
    if torch.compiler.is_compiling():
        torch._check(num_parallel_calls >= 1)  # These checks help torch.compile.
        torch._check(q_BHSD.shape[0] >= 1)
    CUDA_MAX_GRID = 65536
    num_iterations = (num_parallel_calls + CUDA_MAX_GRID - 1) // CUDA_MAX_GRID
    sub_batch = (q_BHSD.shape[0] + num_iterations - 1) // num_iterations

    with sdpa_kernel(backends=backends):
        outputs = []
        for i in range(num_iterations):
            outputs.append(
                torch.nn.functional.scaled_dot_product_attention(
                    q_BHSD[i * sub_batch : (i + 1) * sub_batch].contiguous(),
                    keys[i * sub_batch : (i + 1) * sub_batch].contiguous(),
                    values[i * sub_batch : (i + 1) * sub_batch].contiguous(),
                    attn_mask=None,
                    **enable_gqa,
                )
            )
    output_BHSD = outputs[0] if len(outputs) == 1 else torch.cat(outputs)
    return output_BHSD.permute(0, 2, 1, 3)


class SelfAttention(nn.Module):
    def __init__(self, embed_dim=12, num_heads=3, num_kv_heads=3):
        super().__init__()
        self.num_heads = num_heads
        self.num_kv_heads = num_kv_heads
        self.head_dim = embed_dim // num_heads
        self.q_proj = nn.Linear(embed_dim, num_heads * self.head_dim)
        self.kv_proj = nn.Linear(embed_dim, 2 * num_kv_heads * self.head_dim)
        self.out_proj = nn.Linear(embed_dim, embed_dim)

    def forward(self, x_BSE):
        b, s, _ = x_BSE.shape
        q_BSHD = self.q_proj(x_BSE).view(b, s, self.num_heads, self.head_dim)
        k_BSJD, v_BSJD = self.kv_proj(x_BSE).view(b, s, 2, self.num_kv_heads, self.head_dim).unbind(2)
        out_BSHD = scaled_dot_product_attention(q_BSHD, k_BSJD, v_BSJD)
        return self.out_proj(out_BSHD.reshape(b, s, -1))


attention = torch.compile(SelfAttention().eval())


def make():
    torch.manual_seed(0)
    x = torch.randn(2, 5, 12)
    return SelfAttention().eval(), [(x,)]
