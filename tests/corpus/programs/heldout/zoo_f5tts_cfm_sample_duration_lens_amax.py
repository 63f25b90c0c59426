"""F5-TTS inference: CFM.sample builds masks from `lens.amax()` and `duration.amax()`, pads by tensor amounts, and draws noise with `for dur in duration: torch.randn(dur, ...)`.

Source: SWivid/F5-TTS@2ae2c9bd9b64dab2cb069c4b97e5e7673c521e01:src/f5_tts/model/cfm.py:34-230; src/f5_tts/model/utils.py:32-58,92-97,205-218; src/f5_tts/infer/utils_infer.py (infer_batch_process's model.sample call)
Kept: exists/default, lens_to_mask (length from `t.amax()`),
list_str_to_tensor, get_epss_timesteps, CFM.__init__ and CFM.sample (raw-wave
branch, string text, duration clamp, duplicate_test corner, no_ref_audio,
batch>1 mask, the ODE closure with the cfg_strength branch and cfg_infer
packing, per-sample seeded noise, EPSS / linspace steps, sway sampling,
clear_cache, final where, vocoder hook).
Simplified: torchdiffeq's odeint is a fixed-grid euler loop with the same
call; the DiT backbone is a small conditioner with DiT's keyword interface
(cfg_infer, cache, clear_cache); MelSpec is a framing + linear projection;
mel 4 channels, dim 8.
"""
from __future__ import annotations

from random import random

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.utils.rnn import pad_sequence


def odeint(func, y0, t, method="euler"):
    """torchdiffeq.odeint with the fixed-grid euler method: one step per interval of t."""
    ys = [y0]
    y = y0
    for i in range(len(t) - 1):
        y = y + (t[i + 1] - t[i]) * func(t[i], y)
        ys.append(y)
    return torch.stack(ys)


def exists(v):
    return v is not None


def default(v, d):
    return v if exists(v) else d


def lens_to_mask(t: int["b"], length: int | None = None) -> bool["b n"]:  # noqa: F821
    if not exists(length):
        length = t.amax()

    seq = torch.arange(length, device=t.device)
    return seq[None, :] < t[:, None]


def mask_from_start_end_indices(seq_len: int["b"], start: int["b"], end: int["b"]):  # noqa: F821
    max_seq_len = seq_len.max().item()
    seq = torch.arange(max_seq_len, device=start.device).long()
    start_mask = seq[None, :] >= start[:, None]
    end_mask = seq[None, :] < end[:, None]
    return start_mask & end_mask


def mask_from_frac_lengths(seq_len: int["b"], frac_lengths: float["b"]):  # noqa: F821
    lengths = (frac_lengths * seq_len).long()
    max_start = seq_len - lengths

    rand = torch.rand_like(frac_lengths)
    start = (max_start * rand).long().clamp(min=0)
    end = start + lengths

    return mask_from_start_end_indices(seq_len, start, end)


def get_epss_timesteps(n, device, dtype):
    dt = 1 / 32
    predefined_timesteps = {
        5: [0, 2, 4, 8, 16, 32],
        6: [0, 2, 4, 6, 8, 16, 32],
        7: [0, 2, 4, 6, 8, 16, 24, 32],
        10: [0, 2, 4, 6, 8, 12, 16, 20, 24, 28, 32],
        12: [0, 2, 4, 6, 8, 10, 12, 14, 16, 20, 24, 28, 32],
        16: [0, 1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 14, 16, 20, 24, 28, 32],
    }
    t = predefined_timesteps.get(n, [])
    if not t:
        return torch.linspace(0, 1, n + 1, device=device, dtype=dtype)
    return dt * torch.tensor(t, device=device, dtype=dtype)


def list_str_to_tensor(text: list[str], padding_value=-1) -> int["b nt"]:  # noqa: F821
    list_tensors = [torch.tensor([*bytes(t, "UTF-8")]) for t in text]  # ByT5 style
    text = pad_sequence(list_tensors, padding_value=padding_value, batch_first=True)
    return text


class MelSpec(nn.Module):
    def __init__(self, hop_length=4, n_mel_channels=4):
        super().__init__()
        self.hop_length = hop_length
        self.n_mel_channels = n_mel_channels
        self.proj = nn.Linear(hop_length, n_mel_channels)

    def forward(self, wav):
        frames = wav.unfold(-1, self.hop_length, self.hop_length)
        return self.proj(frames).abs().clamp(min=1e-5).log().permute(0, 2, 1)


class TinyDiT(nn.Module):
    def __init__(self, dim=8, mel_dim=4, text_num_embeds=256):
        super().__init__()
        self.dim = dim
        self.text_embed = nn.Embedding(text_num_embeds + 1, dim)
        self.time_mlp = nn.Linear(1, dim)
        self.input_embed = nn.Linear(mel_dim * 2, dim)
        self.proj_out = nn.Linear(dim, mel_dim)

    def clear_cache(self):
        self.text_cache = None

    def forward(self, x, cond, text, time, mask=None, drop_audio_cond=False, drop_text=False, cfg_infer=False, cache=False):
        if cfg_infer:  # pack cond & uncond forward: b n d -> 2b n d
            x_cond = self.forward(x, cond, text, time, mask, drop_audio_cond=False, drop_text=False, cache=cache)
            x_uncond = self.forward(x, cond, text, time, mask, drop_audio_cond=True, drop_text=True, cache=cache)
            return torch.cat((x_cond, x_uncond), dim=0)
        if time.ndim == 0:
            time = time.repeat(x.shape[0])
        if drop_audio_cond:
            cond = torch.zeros_like(cond)
        text_emb = self.text_embed(text + 1).mean(dim=1, keepdim=True)
        if drop_text:
            text_emb = torch.zeros_like(text_emb)
        h = self.input_embed(torch.cat((x, cond), dim=-1)) + text_emb + self.time_mlp(time[:, None])[:, None]
        if mask is not None:
            h = h.masked_fill(~mask[..., None], 0.0)
        return self.proj_out(F.silu(h))


class CFM(nn.Module):
    def __init__(
        self,
        transformer: nn.Module,
        sigma=0.0,
        odeint_kwargs: dict = dict(method="euler"),
        audio_drop_prob=0.3,
        cond_drop_prob=0.2,
        num_channels=None,
        mel_spec_module: nn.Module | None = None,
        mel_spec_kwargs: dict = dict(),
        frac_lengths_mask: tuple[float, float] = (0.7, 1.0),
        vocab_char_map: dict[str:int] | None = None,
    ):
        super().__init__()

        self.frac_lengths_mask = frac_lengths_mask

        # mel spec
        self.mel_spec = default(mel_spec_module, MelSpec(**mel_spec_kwargs))
        num_channels = default(num_channels, self.mel_spec.n_mel_channels)
        self.num_channels = num_channels

        # classifier-free guidance
        self.audio_drop_prob = audio_drop_prob
        self.cond_drop_prob = cond_drop_prob

        # transformer
        self.transformer = transformer
        dim = transformer.dim
        self.dim = dim

        # conditional flow related
        self.sigma = sigma

        # sampling related
        self.odeint_kwargs = odeint_kwargs

        # vocab map for tokenization
        self.vocab_char_map = vocab_char_map

    @property
    def device(self):
        return next(self.parameters()).device

    def sample(
        self,
        cond: float["b n d"] | float["b nw"],  # noqa: F821
        text: int["b nt"] | list[str],  # noqa: F821
        duration: int | int["b"],  # noqa: F821
        *,
        lens: int["b"] | None = None,  # noqa: F821
        steps=32,
        cfg_strength=1.0,
        sway_sampling_coef=None,
        seed: int | None = None,
        max_duration=65536,
        vocoder=None,
        use_epss=True,
        no_ref_audio=False,
        duplicate_test=False,
        t_inter=0.1,
        edit_mask=None,
    ):
        self.eval()
        # raw wave

        if cond.ndim == 2:
            cond = self.mel_spec(cond)
            cond = cond.permute(0, 2, 1)
            assert cond.shape[-1] == self.num_channels

        cond = cond.to(next(self.parameters()).dtype)

        batch, cond_seq_len, device = *cond.shape[:2], cond.device
        if not exists(lens):
            lens = torch.full((batch,), cond_seq_len, device=device, dtype=torch.long)

        # text

        if isinstance(text, list):
            text = list_str_to_tensor(text).to(device)
            assert text.shape[0] == batch

        # duration

        cond_mask = lens_to_mask(lens)
        if edit_mask is not None:
            cond_mask = cond_mask & edit_mask

        if isinstance(duration, int):
            duration = torch.full((batch,), duration, device=device, dtype=torch.long)

        duration = torch.maximum(
            torch.maximum((text != -1).sum(dim=-1), lens) + 1, duration
        )  # duration at least text/audio prompt length plus one token, so something is generated
        duration = duration.clamp(max=max_duration)
        max_duration = duration.amax()

        # duplicate test corner for inner time step oberservation
        if duplicate_test:
            test_cond = F.pad(cond, (0, 0, cond_seq_len, max_duration - 2 * cond_seq_len), value=0.0)

        cond = F.pad(cond, (0, 0, 0, max_duration - cond_seq_len), value=0.0)
        if no_ref_audio:
            cond = torch.zeros_like(cond)

        cond_mask = F.pad(cond_mask, (0, max_duration - cond_mask.shape[-1]), value=False)
        cond_mask = cond_mask.unsqueeze(-1)
        step_cond = torch.where(
            cond_mask, cond, torch.zeros_like(cond)
        )  # allow direct control (cut cond audio) with lens passed in

        if batch > 1:
            mask = lens_to_mask(duration)
        else:  # save memory and speed up, as single inference need no mask currently
            mask = None

        # neural ode

        def fn(t, x):
            # predict flow (cond)
            if cfg_strength < 1e-5:
                pred = self.transformer(
                    x=x,
                    cond=step_cond,
                    text=text,
                    time=t,
                    mask=mask,
                    drop_audio_cond=False,
                    drop_text=False,
                    cache=True,
                )
                return pred

            # predict flow (cond and uncond), for classifier-free guidance
            pred_cfg = self.transformer(
                x=x,
                cond=step_cond,
                text=text,
                time=t,
                mask=mask,
                cfg_infer=True,
                cache=True,
            )
            pred, null_pred = torch.chunk(pred_cfg, 2, dim=0)
            return pred + (pred - null_pred) * cfg_strength

        # noise input
        # to make sure batch inference result is same with different batch size, and for sure single inference
        # still some difference maybe due to convolutional layers
        y0 = []
        for dur in duration:
            if exists(seed):
                torch.manual_seed(seed)
            y0.append(torch.randn(dur, self.num_channels, device=self.device, dtype=step_cond.dtype))
        y0 = pad_sequence(y0, padding_value=0, batch_first=True)

        t_start = 0

        # duplicate test corner for inner time step oberservation
        if duplicate_test:
            t_start = t_inter
            y0 = (1 - t_start) * y0 + t_start * test_cond
            steps = int(steps * (1 - t_start))

        if t_start == 0 and use_epss:  # use Empirically Pruned Step Sampling for low NFE
            t = get_epss_timesteps(steps, device=self.device, dtype=step_cond.dtype)
        else:
            t = torch.linspace(t_start, 1, steps + 1, device=self.device, dtype=step_cond.dtype)
        if sway_sampling_coef is not None:
            t = t + sway_sampling_coef * (torch.cos(torch.pi / 2 * t) - 1 + t)

        trajectory = odeint(fn, y0, t, **self.odeint_kwargs)
        self.transformer.clear_cache()

        sampled = trajectory[-1]
        out = sampled
        out = torch.where(cond_mask, cond, out)

        if exists(vocoder):
            out = out.permute(0, 2, 1)
            out = vocoder(out)

        return out, trajectory


def infer_process(model, ref_mel, text, duration, ref_lens=None, nfe_step=5, cfg_strength=2.0, sway_sampling_coef=-1.0):
    # infer_batch_process: the model call with the reference audio as cond
    generated, _ = model.sample(
        cond=ref_mel,
        text=text,
        duration=duration,
        lens=ref_lens,
        steps=nfe_step,
        cfg_strength=cfg_strength,
        sway_sampling_coef=sway_sampling_coef,
    )
    return generated


compiled_infer = torch.compile(infer_process)


def make():
    torch.manual_seed(0)
    model = CFM(transformer=TinyDiT(dim=8, mel_dim=4), num_channels=4)
    ref_mel = torch.randn(2, 6, 4)
    text = torch.tensor([[5, 6, 7, -1, -1, -1, -1, -1, -1], [8, 9, 10, 11, 12, 13, 14, 15, 16]])
    return infer_process, [
        (model, ref_mel, text, 9, torch.tensor([6, 4])),
        (model, ref_mel[:1], ["abc"], 8, None, 4, 0.0, None),
    ]
