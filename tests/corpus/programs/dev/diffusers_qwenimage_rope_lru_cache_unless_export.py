"""diffusers QwenEmbedRope.forward: lru_cache_unless_export'd frequency helpers, a logger.warning for mixed sizes, int(max_txt_seq_len).

Source: huggingface/diffusers@58eb52c080:src/diffusers/models/transformers/transformer_qwenimage.py:220-360; src/diffusers/utils/torch_utils.py:380-400
Kept: lru_cache_unless_export (the cached/uncached split on
torch.compiler.is_exporting / is_compiling with the getattr/hasattr probing
and the dynamo fallback), rope_params (outer + polar), _get_device_freqs
(neuron branch), forward's ValueError, the all(...) size check and its
f-string logger.warning, list normalisation, the per-video loop over the
cached _compute_video_freqs with scale_rope max index, `int(max_txt_seq_len)`
(an int or a scalar tensor, as the docstring allows), the slice and cat.
Simplified: 64 positions instead of 4096, axes_dim (2, 2, 4); is_torch_version
is a small stand-in on torch.__version__.
"""
import functools
import logging

import torch
from torch import nn

logger = logging.getLogger(__name__)


def is_torch_version(operation, version):
    current = tuple(int(p) for p in torch.__version__.split("+")[0].split(".")[:2])
    wanted = tuple(int(p) for p in version.split(".")[:2])
    return current < wanted if operation == "<" else current >= wanted


@functools.wraps(functools.lru_cache)
def lru_cache_unless_export(maxsize=128, typed=False):
    def outer_wrapper(fn):
        cached = functools.lru_cache(maxsize=maxsize, typed=typed)(fn)
        if is_torch_version("<", "2.7.0"):
            return cached

        @functools.wraps(fn)
        def inner_wrapper(*args, **kwargs):
            compiler = getattr(torch, "compiler", None)
            is_exporting = bool(compiler and hasattr(compiler, "is_exporting") and compiler.is_exporting())
            is_compiling = bool(compiler and hasattr(compiler, "is_compiling") and compiler.is_compiling())

            if not is_compiling:
                dynamo = getattr(torch, "_dynamo", None)
                if dynamo is not None and hasattr(dynamo, "is_compiling"):
                    is_compiling = dynamo.is_compiling()

            if is_exporting or is_compiling:
                return fn(*args, **kwargs)
            return cached(*args, **kwargs)

        inner_wrapper.cache_clear = cached.cache_clear
        inner_wrapper.cache_info = cached.cache_info
        return inner_wrapper

    return outer_wrapper


class QwenEmbedRope(nn.Module):
    def __init__(self, theta: int, axes_dim, scale_rope=False):
        super().__init__()
        self.theta = theta
        self.axes_dim = axes_dim
        pos_index = torch.arange(64)
        neg_index = torch.arange(64).flip(0) * -1 - 1
        self.pos_freqs = torch.cat(
            [
                self.rope_params(pos_index, self.axes_dim[0], self.theta),
                self.rope_params(pos_index, self.axes_dim[1], self.theta),
                self.rope_params(pos_index, self.axes_dim[2], self.theta),
            ],
            dim=1,
        )
        self.neg_freqs = torch.cat(
            [
                self.rope_params(neg_index, self.axes_dim[0], self.theta),
                self.rope_params(neg_index, self.axes_dim[1], self.theta),
                self.rope_params(neg_index, self.axes_dim[2], self.theta),
            ],
            dim=1,
        )
        self.scale_rope = scale_rope

    def rope_params(self, index, dim, theta=10000):
        assert dim % 2 == 0
        freqs = torch.outer(index, 1.0 / torch.pow(theta, torch.arange(0, dim, 2).to(torch.float32).div(dim)))
        freqs = torch.polar(torch.ones_like(freqs), freqs)
        return freqs

    @lru_cache_unless_export(maxsize=None)
    def _get_device_freqs(self, device):
        if device is not None and device.type == "neuron":
            return torch.angle(self.pos_freqs).to(device), torch.angle(self.neg_freqs).to(device)
        return self.pos_freqs.to(device), self.neg_freqs.to(device)

    def forward(self, video_fhw, device=None, max_txt_seq_len=None):
        if max_txt_seq_len is None:
            raise ValueError("`max_txt_seq_len` must be provided.")

        if isinstance(video_fhw, list) and len(video_fhw) > 1:
            first_fhw = video_fhw[0]
            if not all(fhw == first_fhw for fhw in video_fhw):
                logger.warning(
                    "Batch inference with variable-sized images is not currently supported in QwenEmbedRope. "
                    "All images in the batch should have the same dimensions (frame, height, width). "
                    f"Detected sizes: {video_fhw}. Using the first image's dimensions {first_fhw} "
                    "for RoPE computation, which may lead to incorrect results for other images in the batch."
                )

        if isinstance(video_fhw, list):
            video_fhw = video_fhw[0]
        if not isinstance(video_fhw, list):
            video_fhw = [video_fhw]

        vid_freqs = []
        max_vid_index = 0
        for idx, fhw in enumerate(video_fhw):
            frame, height, width = fhw
            video_freq = self._compute_video_freqs(frame, height, width, idx, device)
            vid_freqs.append(video_freq)

            if self.scale_rope:
                max_vid_index = max(height // 2, width // 2, max_vid_index)
            else:
                max_vid_index = max(height, width, max_vid_index)

        max_txt_seq_len_int = int(max_txt_seq_len)
        pos_freqs_device, _ = self._get_device_freqs(device)
        txt_freqs = pos_freqs_device[max_vid_index : max_vid_index + max_txt_seq_len_int, ...]
        vid_freqs = torch.cat(vid_freqs, dim=0)

        return vid_freqs, txt_freqs

    @lru_cache_unless_export(maxsize=128)
    def _compute_video_freqs(self, frame, height, width, idx=0, device=None):
        seq_lens = frame * height * width
        pos_freqs, neg_freqs = (
            self._get_device_freqs(device) if device is not None else (self.pos_freqs, self.neg_freqs)
        )

        freqs_pos = pos_freqs.split([x // 2 for x in self.axes_dim], dim=1)
        freqs_neg = neg_freqs.split([x // 2 for x in self.axes_dim], dim=1)

        freqs_frame = freqs_pos[0][idx : idx + frame].view(frame, 1, 1, -1).expand(frame, height, width, -1)
        if self.scale_rope:
            freqs_height = torch.cat([freqs_neg[1][-(height - height // 2) :], freqs_pos[1][: height // 2]], dim=0)
            freqs_height = freqs_height.view(1, height, 1, -1).expand(frame, height, width, -1)
            freqs_width = torch.cat([freqs_neg[2][-(width - width // 2) :], freqs_pos[2][: width // 2]], dim=0)
            freqs_width = freqs_width.view(1, 1, width, -1).expand(frame, height, width, -1)
        else:
            freqs_height = freqs_pos[1][:height].view(1, height, 1, -1).expand(frame, height, width, -1)
            freqs_width = freqs_pos[2][:width].view(1, 1, width, -1).expand(frame, height, width, -1)

        freqs = torch.cat([freqs_frame, freqs_height, freqs_width], dim=-1).reshape(seq_lens, -1)
        return freqs.clone().contiguous()


pos_embed = QwenEmbedRope(theta=10000, axes_dim=[2, 2, 4], scale_rope=True)
pos_embed.compile(fullgraph=False)


def make():
    torch.manual_seed(0)
    model = QwenEmbedRope(theta=10000, axes_dim=[2, 2, 4], scale_rope=True)
    cpu = torch.device("cpu")
    return model, [
        ([(1, 4, 4), (1, 4, 4)], cpu, 6),
        ([(1, 4, 4), (1, 2, 6)], cpu, torch.tensor(6)),
    ]
