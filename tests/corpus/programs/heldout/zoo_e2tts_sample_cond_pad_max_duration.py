"""E2-TTS sampling: the output length is `duration.amax()` (a tensor), used to pad the conditioning mel and mask before an ODE solve with classifier-free guidance whose update is split into parallel/orthogonal parts.

Source: lucidrains/e2-tts-pytorch@1028716e6a4072f668716687d732a3b123dda4cf:e2_tts_pytorch/e2_tts.py:1303-1431
Also: e2_tts.py:77-81 (exists, default), e2_tts.py:113-124 (project), e2_tts.py:173-182 (lens_to_mask).
Kept: cfg_transformer_with_pred_head and project verbatim; E2TTS.sample from lens on
(text lengths via `torch.maximum`, int or tensor duration, `duration.amax()` padding of cond
and cond_mask, lens_to_mask(duration), the step closure with torch.where conditioning,
final torch.where with the conditioning).
Simplified: torchdiffeq odeint replaced by a fixed-step Euler loop over the same `fn(t, x)`;
the transformer with prediction head is one Linear over [x, cond] scaled by time and
masked; no duration predictor, mel spectrogram, tokenizer, vocoder or file saving;
einx/einops written as broadcasting/reshape.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn import Module, Linear


def exists(v):
    return v is not None


def default(v, d):
    return v if exists(v) else d


def project(x, y):
    shape = x.shape
    x = x.reshape(shape[0], -1)
    y = y.reshape(shape[0], -1)

    dtype = x.dtype
    x, y = x.double(), y.double()
    unit = F.normalize(y, dim = -1)

    parallel = (x * unit).sum(dim = -1, keepdim = True) * unit
    orthogonal = x - parallel

    return parallel.reshape(shape).to(dtype), orthogonal.reshape(shape).to(dtype)


def lens_to_mask(
    t,
    length: int | None = None
):

    if not exists(length):
        length = t.amax()

    seq = torch.arange(length, device = t.device)
    return seq[None, :] < t[:, None]


class E2TTS(Module):
    def __init__(self, num_channels = 4, text_num_embeds = 16):
        super().__init__()
        self.num_channels = num_channels
        self.text_embed = nn.Embedding(text_num_embeds + 1, num_channels)
        self.to_pred = Linear(num_channels * 2, num_channels)
        self.duration_predictor = None

    @property
    def device(self):
        return next(self.parameters()).device

    def transformer_with_pred_head(self, x, cond, *, times, text = None, mask = None, drop_text_cond = False):
        if exists(text) and not drop_text_cond:
            cond = cond + self.text_embed(text.clamp(min = -1) + 1).mean(dim = 1, keepdim = True)
        pred = self.to_pred(torch.cat((x, cond), dim = -1)) * times
        if exists(mask):
            pred = pred * mask[..., None]
        return pred

    def cfg_transformer_with_pred_head(
        self,
        *args,
        cfg_strength: float = 1.,
        cfg_null_model: E2TTS | None = None,
        remove_parallel_component: bool = True,
        keep_parallel_frac: float = 0.,
        **kwargs,
    ):

        pred = self.transformer_with_pred_head(*args, drop_text_cond = False, **kwargs)

        if cfg_strength < 1e-5:
            return pred

        null_drop_text_cond = not exists(cfg_null_model)
        cfg_null_model = default(cfg_null_model, self)

        null_pred = cfg_null_model.transformer_with_pred_head(*args, drop_text_cond = null_drop_text_cond, **kwargs)

        cfg_update = pred - null_pred

        if remove_parallel_component:
            # https://arxiv.org/abs/2410.02416
            parallel, orthogonal = project(cfg_update, pred)
            cfg_update = orthogonal + parallel * keep_parallel_frac

        return pred + cfg_update * cfg_strength

    @torch.no_grad()
    def sample(
        self,
        cond,
        text = None,
        lens = None,
        duration: int | None = None,
        steps = 4,
        cfg_strength = 1.,
        cfg_null_model: E2TTS | None = None,
        max_duration = 4096,
    ):
        self.eval()

        batch, cond_seq_len, device = *cond.shape[:2], cond.device

        if not exists(lens):
            lens = torch.full((batch,), cond_seq_len, device = device, dtype = torch.long)

        if exists(text):
            text_lens = (text != -1).sum(dim = -1)
            lens = torch.maximum(text_lens, lens) # make sure lengths are at least those of the text characters

        # duration

        cond_mask = lens_to_mask(lens)

        if exists(duration):
            if isinstance(duration, int):
                duration = torch.full((batch,), duration, device = device, dtype = torch.long)

        elif exists(self.duration_predictor):
            duration = self.duration_predictor(cond, text = text, lens = lens, return_loss = False).long()

        duration = torch.maximum(lens + 1, duration) # just add one token so something is generated
        duration = duration.clamp(max = max_duration)

        assert duration.shape[0] == batch

        max_duration = duration.amax()

        cond = F.pad(cond, (0, 0, 0, max_duration - cond_seq_len), value = 0.)
        cond_mask = F.pad(cond_mask, (0, max_duration - cond_mask.shape[-1]), value = False)
        cond_mask = cond_mask[..., None]

        mask = lens_to_mask(duration)

        # neural ode

        def fn(t, x):
            # at each step, conditioning is fixed

            step_cond = torch.where(cond_mask, cond, torch.zeros_like(cond))

            # predict flow

            return self.cfg_transformer_with_pred_head(
                x,
                step_cond,
                times = t,
                text = text,
                mask = mask,
                cfg_strength = cfg_strength,
                cfg_null_model = cfg_null_model
            )

        y0 = torch.randn_like(cond)
        t = torch.linspace(0, 1, steps, device = self.device)

        x = y0
        for t_prev, t_next in zip(t[:-1], t[1:]):
            x = x + (t_next - t_prev) * fn(t_prev, x)

        sampled = x

        out = sampled

        out = torch.where(cond_mask, cond, out)

        return out

    def forward(self, cond, text = None, lens = None, duration = None):
        return self.sample(cond, text, lens, duration)


def build():
    return E2TTS()


sampler = torch.compile(build())


def make():
    torch.manual_seed(0)
    cond = torch.randn(2, 5, 4)
    text = torch.tensor([[3, 4, 5, 6, 7, 8, -1], [1, 2, -1, -1, -1, -1, -1]])
    lens = torch.tensor([5, 3])
    return build(), [(cond, None, None, 8), (cond, text, lens, torch.tensor([9, 6]))]
