"""Kornia's augmentation base: the batch-probability gate `if batch_prob.sum() == 1:` and the
`to_apply.all()` / `.any()` dispatch in transform_inputs.

Source: https://github.com/kornia/kornia/pull/3793
The PR names the shared gate in kornia/augmentation/base.py (`__batch_prob_generator__`) as
the break that keeps every augmentation from compiling; the code below is that base as it
stood before the fix (forward -> forward_parameters -> __batch_prob_generator__ ->
generate_parameters(int(to_apply.sum().item())) -> apply_func -> transform_inputs).
Kept: AugmentationBase's methods named above with their dict plumbing
(_process_kwargs_to_params_and_flags/override_parameters), _adapted_sampling with
torch.distributions.Bernoulli, the index_put merge of applied rows, the autocast checks.
Simplified: the intensity subclass is RandomInvert (max_val - input) with `p_batch`
passed through; the compiled object is an nn.Sequential of three of them (per-sample,
always-on, batch-gated), as users chain augmentations, so one seeded batch takes the
mixed, all and none paths and both sides of the gate; boxes/masks/keypoints paths are dropped.
"""
from typing import Any, Dict, Optional, Tuple

import torch
from torch import nn
from torch.distributions import Bernoulli, Distribution


def _adapted_sampling(shape, dist: Distribution, same_on_batch: bool = False) -> torch.Tensor:
    if same_on_batch:
        return dist.sample((1, *shape[1:])).repeat(shape[0], *[1] * (len(shape) - 1))
    return dist.sample(shape)


def override_parameters(params: Dict[str, Any], params_override: Optional[Dict[str, Any]] = None,
                        if_none_exist: str = "ignore", in_place: bool = False) -> Dict[str, Any]:
    if params_override is None:
        return params
    out = params if in_place else params.copy()
    for k, v in params_override.items():
        if k in params_override:
            out[k] = v
        elif if_none_exist == "ignore":
            pass
        else:
            raise RuntimeError(f"Param `{k}` not existed in `{params_override}`.")
    return out


def is_autocast_enabled() -> bool:
    return torch.is_autocast_enabled()


def _transform_output_shape(output: torch.Tensor, shape: Tuple[int, ...]) -> torch.Tensor:
    out_tensor = output.clone()
    for dim in range(len(out_tensor.shape) - len(shape)):
        if out_tensor.shape[0] != 1:
            raise AssertionError(f"Dimension {dim} of input is expected to be 1, got {out_tensor.shape[0]}")
        out_tensor = out_tensor.squeeze(0)
    return out_tensor


class AugmentationBase(nn.Module):
    def __init__(self, p: float = 0.5, p_batch: float = 1.0, same_on_batch: bool = False,
                 keepdim: bool = False) -> None:
        super().__init__()
        self.p = p
        self.p_batch = p_batch
        self.same_on_batch = same_on_batch
        self.keepdim = keepdim
        self._params: Dict[str, torch.Tensor] = {}
        self._p_gen: Distribution
        self._p_batch_gen: Distribution
        if p != 0.0 or p != 1.0:
            self._p_gen = Bernoulli(self.p)
        if p_batch != 0.0 or p_batch != 1.0:
            self._p_batch_gen = Bernoulli(self.p_batch)
        self.flags: Dict[str, Any] = {}
        self.set_rng_device_and_dtype(torch.device("cpu"), torch.get_default_dtype())

    def set_rng_device_and_dtype(self, device: torch.device, dtype: torch.dtype) -> None:
        self.device = device
        self.dtype = dtype

    def generate_parameters(self, batch_shape: Tuple[int, ...]) -> Dict[str, torch.Tensor]:
        return {}

    def __batch_prob_generator__(
        self,
        batch_shape: Tuple[int, ...],
        p: float,
        p_batch: float,
        same_on_batch: bool,
    ) -> torch.Tensor:
        batch_prob: torch.Tensor
        if p_batch == 1:
            batch_prob = torch.zeros(1) + 1
        elif p_batch == 0:
            batch_prob = torch.zeros(1)
        else:
            batch_prob = _adapted_sampling((1,), self._p_batch_gen, same_on_batch)

        if batch_prob.sum() == 1:
            elem_prob: torch.Tensor
            if p == 1:
                elem_prob = torch.zeros(batch_shape[0]) + 1
            elif p == 0:
                elem_prob = torch.zeros(batch_shape[0])
            else:
                elem_prob = _adapted_sampling((batch_shape[0],), self._p_gen, same_on_batch)
            batch_prob = batch_prob * elem_prob
        else:
            batch_prob = batch_prob.repeat(batch_shape[0])
        if len(batch_prob.shape) == 2:
            return batch_prob[..., 0]
        return batch_prob

    def _process_kwargs_to_params_and_flags(
        self,
        params: Optional[Dict[str, torch.Tensor]] = None,
        flags: Optional[Dict[str, Any]] = None,
        **kwargs: Any,
    ) -> Tuple[Dict[str, torch.Tensor], Dict[str, Any]]:
        save_kwargs = kwargs.get("save_kwargs", False)

        params = self._params if params is None else params
        flags = self.flags if flags is None else flags

        if save_kwargs:
            params = override_parameters(params, kwargs, in_place=True)
            self._params = params
        else:
            self._params = params
            params = override_parameters(params, kwargs, in_place=False)

        flags = override_parameters(flags, kwargs, in_place=False)
        return params, flags

    def forward_parameters(self, batch_shape: Tuple[int, ...]) -> Dict[str, torch.Tensor]:
        batch_prob = self.__batch_prob_generator__(batch_shape, self.p, self.p_batch, self.same_on_batch)
        to_apply = batch_prob > 0.5
        _params = self.generate_parameters(torch.Size((int(to_apply.sum().item()), *batch_shape[1:])))
        if _params is None:
            _params = {}
        _params["batch_prob"] = batch_prob
        input_size = torch.tensor(batch_shape, dtype=torch.long)
        _params.update({"forward_input_shape": input_size})
        return _params

    def apply_non_transform(self, input, params, flags, transform=None):
        return input

    def transform_inputs(
        self,
        input: torch.Tensor,
        params: Dict[str, torch.Tensor],
        flags: Dict[str, Any],
        transform: Optional[torch.Tensor] = None,
        **kwargs: Any,
    ) -> torch.Tensor:
        params, flags = self._process_kwargs_to_params_and_flags(
            self._params if params is None else params, flags, **kwargs
        )

        batch_prob = params["batch_prob"]
        to_apply = batch_prob > 0.5
        ori_shape = input.shape
        in_tensor = self.transform_tensor(input)

        self.validate_tensor(in_tensor)
        if to_apply.all():
            output = self.apply_transform(in_tensor, params, flags, transform=transform)
        elif not to_apply.any():
            output = self.apply_non_transform(in_tensor, params, flags, transform=transform)
        else:
            output = self.apply_non_transform(in_tensor, params, flags, transform=transform)
            applied = self.apply_transform(
                in_tensor[to_apply],
                params,
                flags,
                transform=transform if transform is None else transform[to_apply],
            )

            if is_autocast_enabled():
                output = output.type(input.dtype)
                applied = applied.type(input.dtype)
            output = output.index_put((to_apply,), applied)

        output = _transform_output_shape(output, ori_shape) if self.keepdim else output

        if is_autocast_enabled():
            output = output.type(input.dtype)
        return output

    def apply_func(self, in_tensor, params, flags=None):
        if flags is None:
            flags = self.flags

        output = self.transform_inputs(in_tensor, params, flags)

        return output

    def forward(self, input: torch.Tensor, params: Optional[Dict[str, torch.Tensor]] = None, **kwargs: Any):
        in_tensor = self.__unpack_input__(input)
        input_shape = in_tensor.shape
        in_tensor = self.transform_tensor(in_tensor)
        batch_shape = in_tensor.shape
        if params is None:
            params = self.forward_parameters(batch_shape)

        if "batch_prob" not in params:
            params["batch_prob"] = torch.tensor([True] * batch_shape[0])

        params, flags = self._process_kwargs_to_params_and_flags(params, self.flags, **kwargs)

        output = self.apply_func(in_tensor, params, flags)
        return self.transform_output_tensor(output, input_shape) if self.keepdim else output

    def __unpack_input__(self, input: torch.Tensor) -> torch.Tensor:
        return input

    def transform_output_tensor(self, output: torch.Tensor, output_shape: Tuple[int, ...]) -> torch.Tensor:
        return _transform_output_shape(output, output_shape) if self.keepdim else output


class IntensityAugmentationBase2D(AugmentationBase):
    def transform_tensor(self, input: torch.Tensor, *, shape=None, match_channel: bool = True) -> torch.Tensor:
        if len(input.shape) == 2:
            input = input.unsqueeze(0)
        if len(input.shape) == 3:
            input = input.unsqueeze(0)
        return input

    def validate_tensor(self, input: torch.Tensor) -> None:
        if input.dtype not in (torch.float16, torch.float32, torch.float64):
            raise TypeError(f"Expected input of {(torch.float16, torch.float32, torch.float64)}. Got {input.dtype}")
        if len(input.shape) != 4:
            raise RuntimeError(f"Expect (B, C, H, W). Got {input.shape}.")


class RandomInvert(IntensityAugmentationBase2D):
    def __init__(self, max_val: float = 1.0, same_on_batch: bool = False, p: float = 0.5,
                 p_batch: float = 1.0, keepdim: bool = False) -> None:
        super().__init__(p=p, p_batch=p_batch, same_on_batch=same_on_batch, keepdim=keepdim)
        self.flags = {"max_val": max_val}

    def apply_transform(self, input, params, flags, transform=None):
        max_val = torch.as_tensor(flags["max_val"], device=input.device, dtype=input.dtype)
        return max_val.to(input) - input


def build():
    aug = nn.Sequential(RandomInvert(p=0.5), RandomInvert(p=1.0), RandomInvert(p=0.5, p_batch=0.3))
    return torch.compile(aug)


def make():
    torch.manual_seed(0)
    aug = nn.Sequential(RandomInvert(p=0.5), RandomInvert(p=1.0), RandomInvert(p=0.5, p_batch=0.3))
    return aug, [(torch.rand(4, 1, 3, 3),)]
