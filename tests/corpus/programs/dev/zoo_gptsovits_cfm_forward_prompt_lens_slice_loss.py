"""GPT-SoVITS v3 CFM (shortcut flow matching) training loss: per-sample loops slice `prompt[i, :, : prompt_lens[i]]` and `vt_pred[i, :, prompt_lens[i] : x_lens[i]]` with length-tensor elements, `random.random() < gailv` chooses the two-step shortcut target (torch.randint/pow, masked assignment `d_input[d_input < 1e-2] = 0`).

Source: RVC-Boss/GPT-SoVITS@48b1a0169a28582a8984402f82cf438d3bfa6aca:GPT_SoVITS/module/models.py:1100-1212
Also: GPT_SoVITS/f5_tts/model/backbones/dit.py:DiT.forward, TextEmbedding, InputEmbedding;
GPT_SoVITS/f5_tts/model/modules.py:23-35,354-364; module/commons.py:sequence_mask.
Kept: CFM.__init__ and CFM.forward verbatim (MSELoss criterion, the
per-sample prompt copy/zeroing loop, the shortcut branch, the per-sample loss
loop); DiT.forward's signature and control flow (sequence_mask, `time.ndim == 0`,
dt/text caches, drop flags, `infer` tuple return). The CFM is compiled with
`torch.compile(CFM(...))` and called in training mode.
Simplified: DiT blocks are a stand-in time-modulated masked MLP (no rotary
attention, no ConvNeXt text blocks, no ConvPositionEmbedding, no long skip);
mel_dim 4, text_dim 6, dim 16, 2 blocks, batch 2, 8 frames. With the
harness's random.seed(0), `random.random()` is 0.84, so the shortcut branch
is not taken.
"""
import math
import random

import torch
from torch import nn


def sequence_mask(length, max_length=None):
    if max_length is None:
        max_length = length.max()
    x = torch.arange(max_length, dtype=length.dtype, device=length.device)
    return x.unsqueeze(0) < length.unsqueeze(1)


class SinusPositionEmbedding(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x, scale=1000):
        device = x.device
        half_dim = self.dim // 2
        emb = math.log(10000) / (half_dim - 1)
        emb = torch.exp(torch.arange(half_dim, device=device).float() * -emb)
        emb = scale * x.unsqueeze(1) * emb.unsqueeze(0)
        emb = torch.cat((emb.sin(), emb.cos()), dim=-1)
        return emb


class TimestepEmbedding(nn.Module):
    def __init__(self, dim, freq_embed_dim=256):
        super().__init__()
        self.time_embed = SinusPositionEmbedding(freq_embed_dim)
        self.time_mlp = nn.Sequential(nn.Linear(freq_embed_dim, dim), nn.SiLU(), nn.Linear(dim, dim))

    def forward(self, timestep):
        time_hidden = self.time_embed(timestep)
        time_hidden = time_hidden.to(timestep.dtype)
        time = self.time_mlp(time_hidden)  # b d
        return time


class TextEmbedding(nn.Module):
    def forward(self, text, seq_len, drop_text=False):
        batch, text_len = text.shape[0], text.shape[1]
        if drop_text:  # cfg for text
            text = torch.zeros_like(text)
        return text


class InputEmbedding(nn.Module):
    def __init__(self, mel_dim, text_dim, out_dim):
        super().__init__()
        self.proj = nn.Linear(mel_dim * 2 + text_dim, out_dim)

    def forward(self, x, cond, text_embed, drop_audio_cond=False):
        if drop_audio_cond:  # cfg for cond audio
            cond = torch.zeros_like(cond)
        x = self.proj(torch.cat((x, cond, text_embed), dim=-1))
        return x


class DiTBlock(nn.Module):
    """Stand-in for f5_tts DiTBlock: time-modulated, masked MLP mixing."""

    def __init__(self, dim):
        super().__init__()
        self.norm = nn.LayerNorm(dim, elementwise_affine=False)
        self.mod = nn.Linear(dim, 2 * dim)
        self.ff = nn.Sequential(nn.Linear(dim, 2 * dim), nn.GELU(), nn.Linear(2 * dim, dim))

    def forward(self, x, t, mask=None):
        shift, scale = self.mod(t).unsqueeze(1).chunk(2, dim=-1)
        h = self.ff(self.norm(x) * (1 + scale) + shift)
        if mask is not None:
            h = h.masked_fill(~mask.unsqueeze(-1), 0.0)
        return x + h


class DiT(nn.Module):
    def __init__(self, dim=16, depth=2, mel_dim=4, text_dim=6):
        super().__init__()
        self.time_embed = TimestepEmbedding(dim, freq_embed_dim=8)
        self.d_embed = TimestepEmbedding(dim, freq_embed_dim=8)
        self.text_embed = TextEmbedding()
        self.input_embed = InputEmbedding(mel_dim, text_dim, dim)
        self.transformer_blocks = nn.ModuleList([DiTBlock(dim) for _ in range(depth)])
        self.norm_out = nn.LayerNorm(dim)
        self.proj_out = nn.Linear(dim, mel_dim)

    def forward(  # x, prompt_x, x_lens, t, style,cond
        self,  # d is channel,n is T
        x0,  # nosied input audio
        cond0,  # masked cond audio
        x_lens,
        time,  # time step
        dt_base_bootstrap,
        text0,  # condition feature
        use_grad_ckpt=False,  # bool
        drop_audio_cond=False,  # cfg for cond audio
        drop_text=False,  # cfg for text
        infer=False,  # bool
        text_cache=None,  # torch tensor as text_embed
        dt_cache=None,  # torch tensor as dt
    ):
        x = x0.transpose(2, 1)
        cond = cond0.transpose(2, 1)
        text = text0.transpose(2, 1)
        mask = sequence_mask(x_lens, max_length=x.size(1)).to(x.device)

        batch, seq_len = x.shape[0], x.shape[1]
        if time.ndim == 0:
            time = time.repeat(batch)

        # t: conditioning time, c: context (text + masked cond audio), x: noised input audio
        t = self.time_embed(time)
        if infer and dt_cache is not None:
            dt = dt_cache
        else:
            dt = self.d_embed(dt_base_bootstrap)
        t += dt

        if infer and text_cache is not None:
            text_embed = text_cache
        else:
            text_embed = self.text_embed(text, seq_len, drop_text=drop_text)  ###need to change

        x = self.input_embed(x, cond, text_embed, drop_audio_cond=drop_audio_cond)

        for block in self.transformer_blocks:
            x = block(x, t, mask=mask)

        x = self.norm_out(x)
        output = self.proj_out(x)

        if infer:
            return output, text_embed, dt
        else:
            return output


class CFM(torch.nn.Module):
    def __init__(self, in_channels, dit):
        super().__init__()
        self.sigma_min = 1e-6

        self.estimator = dit

        self.in_channels = in_channels

        self.criterion = torch.nn.MSELoss()

        self.use_conditioner_cache = True

    def forward(self, x1, x_lens, prompt_lens, mu, use_grad_ckpt):
        b, _, t = x1.shape
        t = torch.rand([b], device=mu.device, dtype=x1.dtype)
        x0 = torch.randn_like(x1, device=mu.device)
        vt = x1 - x0
        xt = x0 + t[:, None, None] * vt
        dt = torch.zeros_like(t, device=mu.device)
        prompt = torch.zeros_like(x1)
        for i in range(b):
            prompt[i, :, : prompt_lens[i]] = x1[i, :, : prompt_lens[i]]
            xt[i, :, : prompt_lens[i]] = 0
        gailv = 0.3  # if ttime()>1736250488 else 0.1
        if random.random() < gailv:
            base = torch.randint(2, 8, (t.shape[0],), device=mu.device)
            d = 1 / torch.pow(2, base)
            d_input = d.clone()
            d_input[d_input < 1e-2] = 0
            # with torch.no_grad():
            v_pred_1 = self.estimator(xt, prompt, x_lens, t, d_input, mu, use_grad_ckpt).transpose(2, 1).detach()
            # v_pred_1 = self.diffusion(xt, t, d_input, cond=conditioning).detach()
            x_mid = xt + d[:, None, None] * v_pred_1
            # v_pred_2 = self.diffusion(x_mid, t+d, d_input, cond=conditioning).detach()
            v_pred_2 = self.estimator(x_mid, prompt, x_lens, t + d, d_input, mu, use_grad_ckpt).transpose(2, 1).detach()
            vt = (v_pred_1 + v_pred_2) / 2
            vt = vt.detach()
            dt = 2 * d

        vt_pred = self.estimator(xt, prompt, x_lens, t, dt, mu, use_grad_ckpt).transpose(2, 1)
        loss = 0
        for i in range(b):
            loss += self.criterion(vt_pred[i, :, prompt_lens[i] : x_lens[i]], vt[i, :, prompt_lens[i] : x_lens[i]])
        loss /= b

        return loss


def build_cfm():
    cfm = CFM(4, DiT(dim=16, depth=2, mel_dim=4, text_dim=6))
    return torch.compile(cfm)


def make():
    torch.manual_seed(0)
    cfm = CFM(4, DiT(dim=16, depth=2, mel_dim=4, text_dim=6))
    x1 = torch.randn(2, 4, 8)
    mu = torch.randn(2, 6, 8)
    x_lens = torch.tensor([8, 6])
    prompt_lens = torch.tensor([3, 2])
    return cfm, [(x1, x_lens, prompt_lens, mu, False)]
