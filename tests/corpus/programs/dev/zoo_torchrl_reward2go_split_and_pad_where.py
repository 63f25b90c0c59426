"""TorchRL reward2go: trajectory lengths from `torch.where(done.reshape(-1))[0]`, padded with a `torch.max(splits)` shape and masked_scatter, a geometric filter whose size depends on `is_dynamo_compiling()`, conv1d, and `tensor[mask]` to unpad.

Source: pytorch/rl@ae9719f17b1517af5c2523a36c4616f003ee55cf:torchrl/objectives/value/functional.py:47-114,183-208,1386-1459
Also: torchrl/objectives/value/utils.py:13-110 (_custom_conv1d, 2-D filter branch),
195-210 (_get_num_per_traj), 213-321 (_split_and_pad_sequence), 324-359 (_inv_pad_sequence);
tensordict/utils.py expand_right.
Kept: the _transpose_time decorator (time_dim popped from kwargs, output ndim
checks), reward2go verbatim (shape check, >2-D recursion, transposes, reshape
fallback), _geom_series_like with its compile/eager split and `r.item()`,
_get_num_per_traj, _split_and_pad_sequence for plain tensors with return_mask,
_custom_conv1d's 2-D path with the output-shape RuntimeError, _inv_pad_sequence.
Simplified: TensorDict branches removed (plain tensors only); roll_by_gather's
3-D filter path is left out since reward2go builds a 2-D filter; 2 envs x 6 steps.
"""
from __future__ import annotations

import math
from functools import wraps

import torch

try:
    from torch.compiler import is_dynamo_compiling
except ImportError:
    from torch._dynamo import is_compiling as is_dynamo_compiling


def expand_right(tensor: torch.Tensor, shape) -> torch.Tensor:
    tensor_expand = tensor
    while tensor_expand.ndimension() < len(shape):
        tensor_expand = tensor_expand.unsqueeze(-1)
    tensor_expand = tensor_expand.expand(shape)
    return tensor_expand


def _custom_conv1d(tensor: torch.Tensor, filter: torch.Tensor):
    if filter.ndimension() > 2:
        raise NotImplementedError("batched filters are not part of this program")
    else:
        val_pad = torch.cat(
            [
                tensor,
                torch.zeros(
                    tensor.shape[0], 1, filter.shape[-2] - 1, device=tensor.device
                ),
            ],
            -1,
        )

        # shape = val.shape
        filter = filter.squeeze(-1).unsqueeze(0).unsqueeze(0)  # 1 x 1 x T
        out = torch.conv1d(val_pad, filter)
    # out = out.view(shape)
    if out.shape != tensor.shape:
        raise RuntimeError(
            f"wrong output shape: input shape: {tensor.shape}, output shape: {out.shape}"
        )
    return out


def _flatten_batch(tensor, time_dim=-1):
    return tensor.flatten(0, time_dim)


def _get_num_per_traj(done):
    done = done.clone()
    done[..., -1] = True
    # TODO: find a way of copying once only, eg not using reshape
    num_per_traj = torch.where(done.reshape(-1))[0] + 1
    num_per_traj[1:] = num_per_traj[1:] - num_per_traj[:-1]
    return num_per_traj


def _split_and_pad_sequence(
    tensor: torch.Tensor,
    splits: torch.Tensor,
    return_mask=False,
    time_dim=-1,
):
    max_seq_len = torch.max(splits)
    shape = (len(splits), max_seq_len)

    # int16 supports length up to 32767
    dtype = (
        torch.int16
        if tensor.size(time_dim) < torch.iinfo(torch.int16).max
        else torch.int32
    )
    tensor = _flatten_batch(tensor, time_dim=time_dim)

    def _fill_tensor(tensor):
        arange = torch.arange(max_seq_len, device=tensor.device, dtype=dtype).unsqueeze(
            0
        )
        mask = arange < splits.to(tensor.device).unsqueeze(1)
        empty_tensor = torch.zeros(
            *shape,
            *tensor.shape[1:],
            dtype=tensor.dtype,
            device=tensor.device,
        )
        mask_expand = expand_right(mask, (*mask.shape, *tensor.shape[1:]))
        # We need to use masked-scatter to accommodate vmap
        return torch.masked_scatter(empty_tensor, mask_expand, tensor.reshape(-1))

    tensor = _fill_tensor(tensor)
    if return_mask:
        arange = torch.arange(max_seq_len, device=tensor.device, dtype=dtype).unsqueeze(
            0
        )
        mask = arange < splits.to(tensor.device).unsqueeze(1)
        return tensor, mask
    return tensor


def _inv_pad_sequence(
    tensor: torch.Tensor,
    splits: torch.Tensor,
    mask: torch.Tensor = None,
):
    if splits.numel() == 1:
        return tensor

    if mask is None:
        device = tensor.device
        # int16 supports length up to 32767
        dtype = (
            torch.int16
            if tensor.shape[-1] < torch.iinfo(torch.int16).max
            else torch.int32
        )
        arange = torch.arange(tensor.shape[-1], device=device, dtype=dtype).unsqueeze(0)
        mask = arange < splits.to(device).unsqueeze(1)

    return tensor[mask]


def _transpose_time(fun):
    ERROR = (
        "The tensor shape and the time dimension are not compatible: "
        "got {} and time_dim={}."
    )

    @wraps(fun)
    def transposed_fun(*args, **kwargs):
        time_dim = kwargs.pop("time_dim", -2)

        def transpose_tensor(tensor):
            if not isinstance(tensor, torch.Tensor) or tensor.numel() <= 1:
                return tensor, False
            if time_dim >= 0:
                timedim = time_dim - tensor.ndim
            else:
                timedim = time_dim
            if timedim < -tensor.ndim or timedim >= 0:
                raise RuntimeError(ERROR.format(tensor.shape, timedim))
            if tensor.ndim >= 2:
                single_dim = False
                tensor = tensor.transpose(timedim, -2)
            elif tensor.ndim == 1 and timedim == -1:
                single_dim = True
                tensor = tensor.unsqueeze(-1)
            else:
                raise RuntimeError(ERROR.format(tensor.shape, timedim))
            return tensor, single_dim

        if time_dim != -2:
            single_dim = False
            if args:
                args, single_dim = zip(*(transpose_tensor(arg) for arg in args))
                single_dim = any(single_dim)
            for k, item in list(kwargs.items()):
                item, sd = transpose_tensor(item)
                single_dim = single_dim or sd
                kwargs[k] = item
            out = fun(*args, **kwargs)
            if isinstance(out, torch.Tensor):
                out = transpose_tensor(out)[0]
                if single_dim:
                    out = out.squeeze(-2)
                return out
            if single_dim:
                return tuple(transpose_tensor(_out)[0].squeeze(-2) for _out in out)
            return tuple(transpose_tensor(_out)[0] for _out in out)
        out = fun(*args, **kwargs)
        if isinstance(out, tuple):
            for _out in out:
                if _out.ndim < 2:
                    raise RuntimeError(ERROR.format(_out.shape, time_dim))
        else:
            if out.ndim < 2:
                raise RuntimeError(ERROR.format(out.shape, time_dim))
        return out

    return transposed_fun


def _geom_series_like(t, r, thr):
    """Creates a geometric series of the form [1, gammalmbda, gammalmbda**2] with the shape of `t`.

    Drops all elements which are smaller than `thr` (unless in compile mode).
    """
    if is_dynamo_compiling():
        if isinstance(r, torch.Tensor):
            rs = r.expand_as(t)
        else:
            rs = torch.full_like(t, r)
    else:
        if isinstance(r, torch.Tensor):
            r = r.item()

        if r == 0.0:
            return torch.zeros_like(t)
        elif r >= 1.0:
            lim = t.numel()
        else:
            lim = int(math.log(thr) / math.log(r))

        rs = torch.full_like(t[:lim], r)
    rs[0] = 1.0
    rs = rs.cumprod(0)
    rs = rs.unsqueeze(-1)
    return rs


@_transpose_time
def reward2go(
    reward,
    done,
    gamma,
    *,
    time_dim: int = -2,
):
    shape = reward.shape
    if shape != done.shape:
        raise ValueError(
            f"reward and done must share the same shape, got {reward.shape} and {done.shape}"
        )
    # flatten if needed
    if reward.ndim > 2:
        # we know time dim is at -2, let's put it at -3
        rflip = reward.transpose(-2, -3)
        rflip_shape = rflip.shape[-2:]
        r2go = reward2go(
            rflip.flatten(-2, -1), done.transpose(-2, -3).flatten(-2, -1), gamma=gamma
        ).unflatten(-1, rflip_shape)
        return r2go.transpose(-2, -3)

    # place time at dim -1
    reward = reward.transpose(-2, -1)
    done = done.transpose(-2, -1)

    num_per_traj = _get_num_per_traj(done)
    td0_flat = _split_and_pad_sequence(reward, num_per_traj)
    gammas = _geom_series_like(td0_flat[0], gamma, thr=1e-7)
    cumsum = _custom_conv1d(td0_flat.unsqueeze(1), gammas)
    cumsum = cumsum.squeeze(1)
    cumsum = _inv_pad_sequence(cumsum, num_per_traj)
    cumsum = cumsum.reshape_as(reward)
    cumsum = cumsum.transpose(-2, -1)
    if cumsum.shape != shape:
        try:
            cumsum = cumsum.reshape(shape)
        except RuntimeError:
            raise RuntimeError(
                f"Wrong shape for output reward2go: {cumsum.shape} when {shape} was expected."
            )
    return cumsum


compiled_reward2go = torch.compile(reward2go, dynamic=False)


def make():
    torch.manual_seed(0)
    reward = torch.randn(2, 6, 1)
    done = torch.zeros(2, 6, 1, dtype=torch.bool)
    done[0, 2] = True
    done[1, 4] = True
    no_done = torch.zeros(2, 6, 1, dtype=torch.bool)
    return reward2go, [(reward, done, 0.9), (reward, no_done, 0.99)]
