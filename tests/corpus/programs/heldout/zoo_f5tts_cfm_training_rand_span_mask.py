"""F5-TTS flow-matching training step: `mask_from_frac_lengths` calls `seq_len.max().item()`, and the loss keeps `loss[rand_span_mask]`.

Source: SWivid/F5-TTS@2ae2c9bd9b64dab2cb069c4b97e5e7673c521e01:src/f5_tts/model/cfm.py:1-83,231-301; src/f5_tts/model/utils.py:32-97; src/f5_tts/model/trainer.py (train step call)
Kept: exists/default, lens_to_mask, mask_from_start_end_indices,
mask_from_frac_lengths, list_str_to_tensor, CFM.__init__ fields and
CFM.forward, called the way Trainer.train calls it (raw-wave branch, string-text branch, lens defaulting, random span
mask, flow interpolation, `random()` audio/cond drop, masked MSE loss).
Simplified: the DiT backbone is a small conditioner with the same keyword
interface; MelSpec is a framing + linear projection; no ODE sampler; mel 4
channels, dim 8.
"""
from __future__ import annotations

from random import random

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.utils.rnn import pad_sequence


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

    def forward(self, x, cond, text, time, drop_audio_cond, drop_text, mask=None):
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

    def forward(
        self,
        inp: float["b n d"] | float["b nw"],  # noqa: F821
        text: int["b nt"] | list[str],  # noqa: F821
        *,
        lens: int["b"] | None = None,  # noqa: F821
        noise_scheduler: str | None = None,
    ):
        # handle raw wave
        if inp.ndim == 2:
            inp = self.mel_spec(inp)
            inp = inp.permute(0, 2, 1)
            assert inp.shape[-1] == self.num_channels

        batch, seq_len, dtype, device, _σ1 = *inp.shape[:2], inp.dtype, self.device, self.sigma

        # handle text as string
        if isinstance(text, list):
            text = list_str_to_tensor(text).to(device)
            assert text.shape[0] == batch

        # lens and mask
        if not exists(lens):  # if lens not acquired by trainer from collate_fn
            lens = torch.full((batch,), seq_len, device=device)
        mask = lens_to_mask(lens, length=seq_len)

        # get a random span to mask out for training conditionally
        frac_lengths = torch.zeros((batch,), device=self.device).float().uniform_(*self.frac_lengths_mask)
        rand_span_mask = mask_from_frac_lengths(lens, frac_lengths)

        if exists(mask):
            rand_span_mask &= mask

        # mel is x1
        x1 = inp

        # x0 is gaussian noise
        x0 = torch.randn_like(x1)

        # time step
        time = torch.rand((batch,), dtype=dtype, device=self.device)

        # sample xt (φ_t(x) in the paper)
        t = time.unsqueeze(-1).unsqueeze(-1)
        φ = (1 - t) * x0 + t * x1
        flow = x1 - x0

        # only predict what is within the random mask span for infilling
        cond = torch.where(rand_span_mask[..., None], torch.zeros_like(x1), x1)

        # transformer and cfg training with a drop rate
        drop_audio_cond = random() < self.audio_drop_prob  # p_drop in voicebox paper
        if random() < self.cond_drop_prob:  # p_uncond in voicebox paper
            drop_audio_cond = True
            drop_text = True
        else:
            drop_text = False

        pred = self.transformer(
            x=φ, cond=cond, text=text, time=time, drop_audio_cond=drop_audio_cond, drop_text=drop_text, mask=mask
        )

        # flow matching loss
        loss = F.mse_loss(pred, flow, reduction="none")
        loss = loss[rand_span_mask]

        return loss.mean(), cond, pred


def train_step(model, mel_spec, text_inputs, mel_lengths=None):
    # Trainer.train's inner step: the batch's mel lengths come from the collate_fn
    loss, cond, pred = model(mel_spec, text=text_inputs, lens=mel_lengths, noise_scheduler=None)
    return loss, pred


compiled_step = torch.compile(train_step)


def make():
    torch.manual_seed(0)
    model = CFM(transformer=TinyDiT(dim=8, mel_dim=4), num_channels=4)
    mel = torch.randn(2, 10, 4)
    text = torch.randint(0, 255, (2, 5))
    wave = torch.randn(2, 40)
    return train_step, [
        (model, mel, text),
        (model, mel, text, torch.tensor([10, 7])),
        (model, wave, ["ab", "cde"]),
    ]
