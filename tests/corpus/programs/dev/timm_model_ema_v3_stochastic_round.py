"""timm ModelEmaV3.update compiled: warmup decay in Python, state_dict() walks, _foreach_lerp_, and bfloat16 stochastic rounding with a private torch.Generator.

Source: huggingface/pytorch-image-models@v1.0.31:timm/utils/model_ema.py:135-346
Kept: _lerp_stochastic_round_bf16_ verbatim (chunking by numel, the float32
update, int32 bit view, torch.randint with `generator=`, bitwise_and_, split
and _foreach_copy_), ModelEmaV3's constructor (deepcopy, eval, dtype move, the
seeded torch.Generator), get_decay (update_after_step, warmup power), update
under @torch.no_grad(), _lerp_, _foreach_lerp_ (bf16 vs plain split,
_foreach_lerp_ or mul_/add_), apply_update_ and apply_update_no_buffers_.
Simplified: a Linear + BatchNorm1d model; the compiled function is the EMA
step a training loop runs after optimizer.step().
"""
from copy import deepcopy
from typing import List, Optional

import torch
import torch.nn as nn


def _lerp_stochastic_round_bf16_(
        ema_values: List[torch.Tensor],
        model_values: List[torch.Tensor],
        weight: float,
        chunk_numel: int = 2 ** 22,
        generator: Optional[torch.Generator] = None,
) -> None:
    def _update_chunk(chunk_ema: List[torch.Tensor], chunk_model: List[torch.Tensor]):
        x = torch.cat([v.reshape(-1) for v in chunk_ema]).float()
        x.mul_(1. - weight).add_(torch.cat([v.reshape(-1) for v in chunk_model]), alpha=weight)
        bits = x.view(torch.int32)
        bits.add_(torch.randint(
            0, 1 << 16, bits.shape, dtype=torch.int32, device=bits.device, generator=generator,
        ))
        bits.bitwise_and_(-(1 << 16))  # truncate to bfloat16 precision (exactly representable in bfloat16)
        x_split = [xi.view(v.shape) for xi, v in zip(x.split([v.numel() for v in chunk_ema]), chunk_ema)]
        if hasattr(torch, '_foreach_copy_'):
            torch._foreach_copy_(chunk_ema, x_split)
        else:
            for ema_v, xi in zip(chunk_ema, x_split):
                ema_v.copy_(xi)

    chunk_ema, chunk_model, numel = [], [], 0
    for ema_v, model_v in zip(ema_values, model_values):
        if numel and numel + ema_v.numel() > chunk_numel:
            _update_chunk(chunk_ema, chunk_model)
            chunk_ema, chunk_model, numel = [], [], 0
        chunk_ema.append(ema_v)
        chunk_model.append(model_v)
        numel += ema_v.numel()
    if chunk_ema:
        _update_chunk(chunk_ema, chunk_model)


class ModelEmaV3(nn.Module):
    def __init__(
            self,
            model,
            decay: float = 0.9999,
            min_decay: float = 0.0,
            update_after_step: int = 0,
            use_warmup: bool = False,
            warmup_gamma: float = 1.0,
            warmup_power: float = 2/3,
            device: Optional[torch.device] = None,
            dtype: Optional[torch.dtype] = None,
            stochastic_rounding: bool = True,
            stochastic_rounding_seed: int = 0,
            foreach: bool = True,
            exclude_buffers: bool = False,
    ):
        super().__init__()
        # make a copy of the model for accumulating moving average of weights
        self.module = deepcopy(model)
        self.module.eval()
        self.decay = decay
        self.min_decay = min_decay
        self.update_after_step = update_after_step
        self.use_warmup = use_warmup
        self.warmup_gamma = warmup_gamma
        self.warmup_power = warmup_power
        self.foreach = foreach
        self.device = device  # perform ema on different device from model if set
        self.dtype = dtype  # keep ema in a different (e.g. higher precision) dtype from model if set
        self.stochastic_rounding = stochastic_rounding  # stochastic rounding for bfloat16 ema tensors
        self.stochastic_rounding_seed = stochastic_rounding_seed
        self.exclude_buffers = exclude_buffers
        if self.device is not None and device != next(model.parameters()).device:
            self.foreach = False  # cannot use foreach methods with different devices
            self.module.to(device=device)
        if self.dtype is not None:
            self.module.to(dtype=dtype)
        # private RNG for stochastic rounding, leaves global RNG untouched and keeps ranks in sync
        self._sr_generator = torch.Generator(device=next(self.module.parameters()).device)
        self._sr_generator.manual_seed(stochastic_rounding_seed)

    def get_decay(self, step: Optional[int] = None) -> float:
        """
        Compute the decay factor for the exponential moving average.
        """
        if step is None:
            return self.decay

        step = max(0, step - self.update_after_step - 1)
        if step <= 0:
            return 0.0

        if self.use_warmup:
            decay = 1 - (1 + step / self.warmup_gamma) ** -self.warmup_power
            decay = max(min(decay, self.decay), self.min_decay)
        else:
            decay = self.decay

        return decay

    @torch.no_grad()
    def update(self, model, step: Optional[int] = None):
        decay = self.get_decay(step)
        if self.exclude_buffers:
            self.apply_update_no_buffers_(model, decay)
        else:
            self.apply_update_(model, decay)

    def _lerp_(self, ema_v: torch.Tensor, model_v: torch.Tensor, weight: float) -> None:
        # single tensor update, tensors on same device, model_v cast to ema dtype as needed
        if self.stochastic_rounding and ema_v.dtype == torch.bfloat16:
            _lerp_stochastic_round_bf16_([ema_v], [model_v], weight, generator=self._sr_generator)
        else:
            ema_v.lerp_(model_v.to(dtype=ema_v.dtype), weight=weight)

    def _foreach_lerp_(self, ema_values: List[torch.Tensor], model_values: List[torch.Tensor], weight: float) -> None:
        # multi tensor update, tensors on same device, handles mixed ema / model dtypes
        if self.stochastic_rounding:
            sr_ema_values, sr_model_values = [], []
            lerp_ema_values, lerp_model_values = [], []
            for ema_v, model_v in zip(ema_values, model_values):
                if ema_v.dtype == torch.bfloat16:
                    sr_ema_values.append(ema_v)
                    sr_model_values.append(model_v)
                else:
                    lerp_ema_values.append(ema_v)
                    lerp_model_values.append(model_v)
            if sr_ema_values:
                _lerp_stochastic_round_bf16_(sr_ema_values, sr_model_values, weight, generator=self._sr_generator)
            ema_values, model_values = lerp_ema_values, lerp_model_values
        if not ema_values:
            return
        same_dtype = all(ema_v.dtype == model_v.dtype for ema_v, model_v in zip(ema_values, model_values))
        if same_dtype and hasattr(torch, '_foreach_lerp_'):
            torch._foreach_lerp_(ema_values, model_values, weight=weight)
        else:
            # lerp_ requires matching dtypes, add_ promotes in-kernel so no cast copies of the model are needed
            torch._foreach_mul_(ema_values, scalar=1. - weight)
            torch._foreach_add_(ema_values, model_values, alpha=weight)

    def apply_update_(self, model, decay: float):
        # interpolate parameters and buffers
        if self.foreach:
            ema_lerp_values = []
            model_lerp_values = []
            for ema_v, model_v in zip(self.module.state_dict().values(), model.state_dict().values()):
                if ema_v.is_floating_point():
                    ema_lerp_values.append(ema_v)
                    model_lerp_values.append(model_v)
                else:
                    ema_v.copy_(model_v)

            self._foreach_lerp_(ema_lerp_values, model_lerp_values, weight=1. - decay)
        else:
            for ema_v, model_v in zip(self.module.state_dict().values(), model.state_dict().values()):
                if ema_v.is_floating_point():
                    self._lerp_(ema_v, model_v.to(device=self.device), weight=1. - decay)
                else:
                    ema_v.copy_(model_v.to(device=self.device))

    def apply_update_no_buffers_(self, model, decay: float):
        # interpolate parameters, copy buffers
        ema_params = list(self.module.parameters())
        model_params = list(model.parameters())
        if self.foreach:
            self._foreach_lerp_(ema_params, model_params, weight=1. - decay)
        else:
            for ema_p, model_p in zip(ema_params, model_params):
                self._lerp_(ema_p, model_p.to(device=self.device), weight=1. - decay)

        for ema_b, model_b in zip(self.module.buffers(), model.buffers()):
            ema_b.copy_(model_b.to(device=self.device))

    def forward(self, *args, **kwargs):
        return self.module(*args, **kwargs)


@torch.compile(dynamic=False)
def ema_step(model_ema, model, num_updates):
    model_ema.update(model, step=num_updates)
    return [v.clone() for v in model_ema.module.state_dict().values()]


def make():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 6), nn.BatchNorm1d(6), nn.Linear(6, 2))
    model(torch.randn(5, 4))  # running stats and num_batches_tracked move
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.5)
    fp32 = ModelEmaV3(model, decay=0.99, use_warmup=True)
    bf16 = ModelEmaV3(model, decay=0.99, dtype=torch.bfloat16)
    loop = ModelEmaV3(model, decay=0.99, dtype=torch.bfloat16, foreach=False, device=torch.device("cpu"))
    no_buffers = ModelEmaV3(model, decay=0.9, exclude_buffers=True, update_after_step=3)
    return ema_step._torchdynamo_orig_callable, [
        (fp32, model, 10),
        (bf16, model, None),
        (loop, model, 5),
        (no_buffers, model, 2),
        (no_buffers, model, 10),
    ]
