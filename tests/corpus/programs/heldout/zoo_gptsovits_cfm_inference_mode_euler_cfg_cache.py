"""GPT-SoVITS v3 CFM.inference under @torch.inference_mode: fixed-step Euler loop over n_timesteps with prompt frames zeroed by slice assignment, conditioner caches (text_emb, dt) carried between steps, `inference_cfg_rate > 1e-5` second estimator pass for CFG.

Source: RVC-Boss/GPT-SoVITS@48b1a0169a28582a8984402f82cf438d3bfa6aca:GPT_SoVITS/module/models.py:1100-1172
Also: GPT_SoVITS/f5_tts/model/backbones/dit.py:DiT.forward, TextEmbedding, InputEmbedding;
GPT_SoVITS/f5_tts/model/modules.py:23-35,354-364; module/commons.py:sequence_mask.
Kept: CFM.__init__ and CFM.inference verbatim (decorator, prompt_x copy,
cache plumbing, use_conditioner_cache flag, CFG combination); DiT.forward's
signature and control flow (sequence_mask, `time.ndim == 0`, dt/text caches,
drop flags, `infer` tuple return). The sampler is compiled as
`cfm.inference = torch.compile(cfm.inference)`.
Simplified: DiT blocks are a stand-in time-modulated masked MLP (no rotary
attention, no ConvNeXt text blocks, no ConvPositionEmbedding, no long skip);
mel_dim 4, text_dim 6, dim 16, 2 blocks, batch 1, 8 frames, 2-3 steps.
"""
import math

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

    @torch.inference_mode()
    def inference(self, mu, x_lens, prompt, n_timesteps, temperature=1.0, inference_cfg_rate=0):
        """Forward diffusion"""
        B, T = mu.size(0), mu.size(1)
        x = torch.randn([B, self.in_channels, T], device=mu.device, dtype=mu.dtype) * temperature
        prompt_len = prompt.size(-1)
        prompt_x = torch.zeros_like(x, dtype=mu.dtype)
        prompt_x[..., :prompt_len] = prompt[..., :prompt_len]
        x[..., :prompt_len] = 0
        mu = mu.transpose(2, 1)
        t = 0
        d = 1 / n_timesteps
        text_cache = None
        text_cfg_cache = None
        dt_cache = None
        d_tensor = torch.ones(x.shape[0], device=x.device, dtype=mu.dtype) * d
        for j in range(n_timesteps):
            t_tensor = torch.ones(x.shape[0], device=x.device, dtype=mu.dtype) * t
            # v_pred = model(x, t_tensor, d_tensor, **extra_args)
            v_pred, text_emb, dt = self.estimator(
                x,
                prompt_x,
                x_lens,
                t_tensor,
                d_tensor,
                mu,
                use_grad_ckpt=False,
                drop_audio_cond=False,
                drop_text=False,
                infer=True,
                text_cache=text_cache,
                dt_cache=dt_cache,
            )
            v_pred = v_pred.transpose(2, 1)
            if self.use_conditioner_cache:
                text_cache = text_emb
                dt_cache = dt
            if inference_cfg_rate > 1e-5:
                neg, text_cfg_emb, _ = self.estimator(
                    x,
                    prompt_x,
                    x_lens,
                    t_tensor,
                    d_tensor,
                    mu,
                    use_grad_ckpt=False,
                    drop_audio_cond=True,
                    drop_text=True,
                    infer=True,
                    text_cache=text_cfg_cache,
                    dt_cache=dt_cache,
                )
                neg = neg.transpose(2, 1)
                if self.use_conditioner_cache:
                    text_cfg_cache = text_cfg_emb
                v_pred = v_pred + (v_pred - neg) * inference_cfg_rate
            x = x + d * v_pred
            t = t + d
            x[:, :, :prompt_len] = 0
        return x


def build_sampler():
    cfm = CFM(4, DiT(dim=16, depth=2, mel_dim=4, text_dim=6)).eval()
    cfm.inference = torch.compile(cfm.inference)
    return cfm


def make():
    torch.manual_seed(0)
    cfm = CFM(4, DiT(dim=16, depth=2, mel_dim=4, text_dim=6)).eval()
    # mu is (B, T, text_dim): CFM.inference transposes it to (B, text_dim, T) for the DiT
    mu = torch.randn(1, 8, 6)
    x_lens = torch.tensor([8])
    prompt = torch.randn(1, 4, 3)
    return cfm.inference, [(mu, x_lens, prompt, 2), (mu, x_lens, prompt, 3, 1.0, 2.0)]
