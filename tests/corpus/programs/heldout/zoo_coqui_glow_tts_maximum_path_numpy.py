"""Coqui TTS Glow-TTS alignment: the MAS log-likelihood is built in torch, then maximum_path (no Cython build) falls back to maximum_path_numpy, which moves value and mask to numpy and loops.

Source: coqui-ai/TTS@dbf1a08a0d4e47fdad6172e433eeb34bc6b13b4e:TTS/tts/utils/helpers.py:1-11,43-57,172-236
Also: TTS/tts/models/glow_tts.py:137-148,226-249 (compute_outputs and the
`with torch.no_grad():` alignment block of forward).
Kept: the CYTHON flag with the try/except import, maximum_path dispatch,
maximum_path_numpy verbatim (value.cpu().detach().numpy(), the two numpy
loops, torch.from_numpy back), sequence_mask, the logp1..logp4 terms,
compute_outputs.
Simplified: the encoder/decoder flows are replaced by the tensors they
return (o_mean, o_log_scale, z, masks as arguments); channels 3, T_en 4,
T_de 6.
"""
import math

import numpy as np
import torch

try:
    from TTS.tts.utils.monotonic_align.core import maximum_path_c

    CYTHON = True
except ModuleNotFoundError:
    CYTHON = False


def sequence_mask(sequence_length, max_len=None):
    if max_len is None:
        max_len = sequence_length.max()
    seq_range = torch.arange(max_len, dtype=sequence_length.dtype, device=sequence_length.device)
    # B x T_max
    return seq_range.unsqueeze(0) < sequence_length.unsqueeze(1)


def maximum_path(value, mask):
    if CYTHON:
        return maximum_path_cython(value, mask)
    return maximum_path_numpy(value, mask)


def maximum_path_cython(value, mask):
    """Cython optimised version."""
    value = value * mask
    device = value.device
    dtype = value.dtype
    value = value.data.cpu().numpy().astype(np.float32)
    path = np.zeros_like(value).astype(np.int32)
    mask = mask.data.cpu().numpy()

    t_x_max = mask.sum(1)[:, 0].astype(np.int32)
    t_y_max = mask.sum(2)[:, 0].astype(np.int32)
    maximum_path_c(path, value, t_x_max, t_y_max)
    return torch.from_numpy(path).to(device=device, dtype=dtype)


def maximum_path_numpy(value, mask, max_neg_val=None):
    """
    Monotonic alignment search algorithm
    Numpy-friendly version. It's about 4 times faster than torch version.
    value: [b, t_x, t_y]
    mask: [b, t_x, t_y]
    """
    if max_neg_val is None:
        max_neg_val = -np.inf  # Patch for Sphinx complaint
    value = value * mask

    device = value.device
    dtype = value.dtype
    value = value.cpu().detach().numpy()
    mask = mask.cpu().detach().numpy().astype(bool)

    b, t_x, t_y = value.shape
    direction = np.zeros(value.shape, dtype=np.int64)
    v = np.zeros((b, t_x), dtype=np.float32)
    x_range = np.arange(t_x, dtype=np.float32).reshape(1, -1)
    for j in range(t_y):
        v0 = np.pad(v, [[0, 0], [1, 0]], mode="constant", constant_values=max_neg_val)[:, :-1]
        v1 = v
        max_mask = v1 >= v0
        v_max = np.where(max_mask, v1, v0)
        direction[:, :, j] = max_mask

        index_mask = x_range <= j
        v = np.where(index_mask, v_max + value[:, :, j], max_neg_val)
    direction = np.where(mask, direction, 1)

    path = np.zeros(value.shape, dtype=np.float32)
    index = mask[:, :, 0].sum(1).astype(np.int64) - 1
    index_range = np.arange(b)
    for j in reversed(range(t_y)):
        path[index_range, index, j] = 1
        index = index + direction[index_range, index, j] - 1
    path = path * mask.astype(np.float32)
    path = torch.from_numpy(path).to(device=device, dtype=dtype)
    return path


def compute_outputs(attn, o_mean, o_log_scale, x_mask):
    """Compute and format the mode outputs with the given alignment map"""
    y_mean = torch.matmul(attn.squeeze(1).transpose(1, 2), o_mean.transpose(1, 2)).transpose(
        1, 2
    )  # [b, t', t], [b, t, d] -> [b, d, t']
    y_log_scale = torch.matmul(attn.squeeze(1).transpose(1, 2), o_log_scale.transpose(1, 2)).transpose(
        1, 2
    )  # [b, t', t], [b, t, d] -> [b, d, t']
    # compute total duration with adjustment
    o_attn_dur = torch.log(1 + torch.sum(attn, -1)) * x_mask
    return y_mean, y_log_scale, o_attn_dur


@torch.compile
def align(o_mean, o_log_scale, z, x_mask, y_lengths, y_max_length):
    y_mask = torch.unsqueeze(sequence_mask(y_lengths, y_max_length), 1).to(x_mask.dtype)
    # [B, 1, T_en, T_de]
    attn_mask = torch.unsqueeze(x_mask, -1) * torch.unsqueeze(y_mask, 2)
    # find the alignment path
    with torch.no_grad():
        o_scale = torch.exp(-2 * o_log_scale)
        logp1 = torch.sum(-0.5 * math.log(2 * math.pi) - o_log_scale, [1]).unsqueeze(-1)  # [b, t, 1]
        logp2 = torch.matmul(o_scale.transpose(1, 2), -0.5 * (z**2))  # [b, t, d] x [b, d, t'] = [b, t, t']
        logp3 = torch.matmul((o_mean * o_scale).transpose(1, 2), z)  # [b, t, d] x [b, d, t'] = [b, t, t']
        logp4 = torch.sum(-0.5 * (o_mean**2) * o_scale, [1]).unsqueeze(-1)  # [b, t, 1]
        logp = logp1 + logp2 + logp3 + logp4  # [b, t, t']
        attn = maximum_path(logp, attn_mask.squeeze(1)).unsqueeze(1).detach()
    y_mean, y_log_scale, o_attn_dur = compute_outputs(attn, o_mean, o_log_scale, x_mask)
    attn = attn.squeeze(1).permute(0, 2, 1)
    return y_mean, y_log_scale, o_attn_dur, attn


def make():
    torch.manual_seed(0)
    o_mean = torch.randn(2, 3, 4)
    o_log_scale = 0.1 * torch.randn(2, 3, 4)
    z = torch.randn(2, 3, 6)
    x_mask = torch.tensor([[[1.0, 1.0, 1.0, 1.0]], [[1.0, 1.0, 1.0, 0.0]]])
    y_lengths = torch.tensor([6, 5])
    return align._torchdynamo_orig_callable, [(o_mean, o_log_scale, z, x_mask, y_lengths, 6)]
