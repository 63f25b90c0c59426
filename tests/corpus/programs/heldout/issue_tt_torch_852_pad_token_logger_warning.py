"""`logger.warning(f"Setting `pad_token_id` to `eos_token_id`:{pad_token_tensor} ...")` inside generation's
`_prepare_special_tokens`, traced under compile.

Source: https://github.com/tenstorrent/tt-torch/issues/852 (transformers generation/utils.py:2150)
Kept: the tensor conversion of the special tokens, the `pad_token_tensor is None and eos_token_tensor is not None`
branch with the f-string warning and the `eos_token_tensor[0]` fallback.
Simplified: only pad/eos tokens; a compiled step function calls the helper and pads a sequence.
"""
import logging

import torch

logger = logging.getLogger(__name__)


def _tensor_or_none(token, device=None):
    if token is None:
        return token
    if isinstance(token, torch.Tensor):
        return token.to(device)
    return torch.tensor(token, device=device, dtype=torch.long)


def _prepare_special_tokens(pad_token_id, eos_token_id, device=None):
    eos_token_tensor = _tensor_or_none(eos_token_id, device=device)
    pad_token_tensor = _tensor_or_none(pad_token_id, device=device)
    if eos_token_tensor is not None and eos_token_tensor.ndim == 0:
        eos_token_tensor = eos_token_tensor.unsqueeze(0)
    # Set pad token if unset (and there are conditions to do so)
    if pad_token_tensor is None and eos_token_tensor is not None:
        pad_token_tensor = eos_token_tensor[0]
        logger.warning(f"Setting `pad_token_id` to `eos_token_id`:{pad_token_tensor} for open-end generation.")
    return pad_token_tensor, eos_token_tensor


def pad_step(input_ids, pad_token_id, eos_token_id):
    pad_token_tensor, eos_token_tensor = _prepare_special_tokens(pad_token_id, eos_token_id, input_ids.device)
    pad = pad_token_tensor.expand(input_ids.shape[0], 1)
    return torch.cat([input_ids, pad], dim=-1)


compiled_step = torch.compile(pad_step)


def make():
    ids = torch.tensor([[5, 6, 7]])
    return pad_step, [(ids, None, 2), (ids, 0, 2)]
