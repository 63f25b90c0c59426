"""diffusers VQDiffusionScheduler.step: `timestep == 0` on a tensor timestep, q_posterior with masked-class boolean assignment.

Source: huggingface/diffusers@034b914b28:src/diffusers/schedulers/scheduling_vq_diffusion.py:41-470
Kept: index_to_log_onehot, gumbel_noised, alpha_schedules/gamma_schedules
(numpy), __init__'s float64 -> log -> float tables, set_timesteps, step()
verbatim (`if timestep == 0`, gumbel noise, argmax, return_dict tuple),
q_posterior, log_Q_t_transitioning_to_known_class (cumulative switch,
`log_Q_t[mask_class_mask] = c`, re-appended masked row) and
apply_cumulative_transitions; the VQDiffusionPipeline loop body
(transformer, clamp(-70), step) around them.
Simplified: ConfigMixin is dropped; the Transformer2DModel is an embedding +
linear + log_softmax over 5 classes (+1 mask) and 6 latent pixels; no
truncation; 10 train steps.
"""
from typing import Optional, Tuple, Union

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn


def index_to_log_onehot(x: torch.LongTensor, num_classes: int) -> torch.Tensor:
    x_onehot = F.one_hot(x, num_classes)
    x_onehot = x_onehot.permute(0, 2, 1)
    log_x = torch.log(x_onehot.float().clamp(min=1e-30))
    return log_x


def gumbel_noised(logits: torch.Tensor, generator: Optional[torch.Generator]) -> torch.Tensor:
    uniform = torch.rand(logits.shape, device=logits.device, generator=generator)
    gumbel_noise = -torch.log(-torch.log(uniform + 1e-30) + 1e-30)
    noised = gumbel_noise + logits
    return noised


def alpha_schedules(num_diffusion_timesteps: int, alpha_cum_start=0.99999, alpha_cum_end=0.000009):
    att = (
        np.arange(0, num_diffusion_timesteps) / (num_diffusion_timesteps - 1) * (alpha_cum_end - alpha_cum_start)
        + alpha_cum_start
    )
    att = np.concatenate(([1], att))
    at = att[1:] / att[:-1]
    att = np.concatenate((att[1:], [1]))
    return at, att


def gamma_schedules(num_diffusion_timesteps: int, gamma_cum_start=0.000009, gamma_cum_end=0.99999):
    ctt = (
        np.arange(0, num_diffusion_timesteps) / (num_diffusion_timesteps - 1) * (gamma_cum_end - gamma_cum_start)
        + gamma_cum_start
    )
    ctt = np.concatenate(([0], ctt))
    one_minus_ctt = 1 - ctt
    one_minus_ct = one_minus_ctt[1:] / one_minus_ctt[:-1]
    ct = 1 - one_minus_ct
    ctt = np.concatenate((ctt[1:], [0]))
    return ct, ctt


class VQDiffusionScheduler:
    order = 1

    def __init__(
        self,
        num_vec_classes: int,
        num_train_timesteps: int = 100,
        alpha_cum_start: float = 0.99999,
        alpha_cum_end: float = 0.000009,
        gamma_cum_start: float = 0.000009,
        gamma_cum_end: float = 0.99999,
    ):
        self.num_embed = num_vec_classes

        self.mask_class = self.num_embed - 1

        at, att = alpha_schedules(num_train_timesteps, alpha_cum_start=alpha_cum_start, alpha_cum_end=alpha_cum_end)
        ct, ctt = gamma_schedules(num_train_timesteps, gamma_cum_start=gamma_cum_start, gamma_cum_end=gamma_cum_end)

        num_non_mask_classes = self.num_embed - 1
        bt = (1 - at - ct) / num_non_mask_classes
        btt = (1 - att - ctt) / num_non_mask_classes

        at = torch.tensor(at.astype("float64"))
        bt = torch.tensor(bt.astype("float64"))
        ct = torch.tensor(ct.astype("float64"))
        log_at = torch.log(at)
        log_bt = torch.log(bt)
        log_ct = torch.log(ct)

        att = torch.tensor(att.astype("float64"))
        btt = torch.tensor(btt.astype("float64"))
        ctt = torch.tensor(ctt.astype("float64"))
        log_cumprod_at = torch.log(att)
        log_cumprod_bt = torch.log(btt)
        log_cumprod_ct = torch.log(ctt)

        self.log_at = log_at.float()
        self.log_bt = log_bt.float()
        self.log_ct = log_ct.float()
        self.log_cumprod_at = log_cumprod_at.float()
        self.log_cumprod_bt = log_cumprod_bt.float()
        self.log_cumprod_ct = log_cumprod_ct.float()

        self.num_inference_steps = None
        self.timesteps = torch.from_numpy(np.arange(0, num_train_timesteps)[::-1].copy())

    def set_timesteps(self, num_inference_steps: int, device: Union[str, torch.device] = None):
        self.num_inference_steps = num_inference_steps
        timesteps = np.arange(0, self.num_inference_steps)[::-1].copy()
        self.timesteps = torch.from_numpy(timesteps).to(device)

        self.log_at = self.log_at.to(device)
        self.log_bt = self.log_bt.to(device)
        self.log_ct = self.log_ct.to(device)
        self.log_cumprod_at = self.log_cumprod_at.to(device)
        self.log_cumprod_bt = self.log_cumprod_bt.to(device)
        self.log_cumprod_ct = self.log_cumprod_ct.to(device)

    def step(
        self,
        model_output: torch.Tensor,
        timestep: torch.long,
        sample: torch.LongTensor,
        generator: Optional[torch.Generator] = None,
        return_dict: bool = True,
    ):
        if timestep == 0:
            log_p_x_t_min_1 = model_output
        else:
            log_p_x_t_min_1 = self.q_posterior(model_output, sample, timestep)

        log_p_x_t_min_1 = gumbel_noised(log_p_x_t_min_1, generator)

        x_t_min_1 = log_p_x_t_min_1.argmax(dim=1)

        if not return_dict:
            return (x_t_min_1,)

        return {"prev_sample": x_t_min_1}

    def q_posterior(self, log_p_x_0, x_t, t):
        log_onehot_x_t = index_to_log_onehot(x_t, self.num_embed)

        log_q_x_t_given_x_0 = self.log_Q_t_transitioning_to_known_class(
            t=t, x_t=x_t, log_onehot_x_t=log_onehot_x_t, cumulative=True
        )

        log_q_t_given_x_t_min_1 = self.log_Q_t_transitioning_to_known_class(
            t=t, x_t=x_t, log_onehot_x_t=log_onehot_x_t, cumulative=False
        )

        q = log_p_x_0 - log_q_x_t_given_x_0

        q_log_sum_exp = torch.logsumexp(q, dim=1, keepdim=True)

        q = q - q_log_sum_exp

        q = self.apply_cumulative_transitions(q, t - 1)

        log_p_x_t_min_1 = q + log_q_t_given_x_t_min_1 + q_log_sum_exp

        return log_p_x_t_min_1

    def log_Q_t_transitioning_to_known_class(
        self, *, t: torch.int, x_t: torch.LongTensor, log_onehot_x_t: torch.Tensor, cumulative: bool
    ):
        if cumulative:
            a = self.log_cumprod_at[t]
            b = self.log_cumprod_bt[t]
            c = self.log_cumprod_ct[t]
        else:
            a = self.log_at[t]
            b = self.log_bt[t]
            c = self.log_ct[t]

        if not cumulative:
            log_onehot_x_t_transitioning_from_masked = log_onehot_x_t[:, -1, :].unsqueeze(1)

        log_onehot_x_t = log_onehot_x_t[:, :-1, :]

        log_Q_t = (log_onehot_x_t + a).logaddexp(b)

        mask_class_mask = x_t == self.mask_class
        mask_class_mask = mask_class_mask.unsqueeze(1).expand(-1, self.num_embed - 1, -1)
        log_Q_t[mask_class_mask] = c

        if not cumulative:
            log_Q_t = torch.cat((log_Q_t, log_onehot_x_t_transitioning_from_masked), dim=1)

        return log_Q_t

    def apply_cumulative_transitions(self, q, t):
        bsz = q.shape[0]
        a = self.log_cumprod_at[t]
        b = self.log_cumprod_bt[t]
        c = self.log_cumprod_ct[t]

        num_latent_pixels = q.shape[2]
        c = c.expand(bsz, 1, num_latent_pixels)

        q = (q + a).logaddexp(b)
        q = torch.cat((q, c), dim=1)

        return q


class TinyVQTransformer(nn.Module):
    def __init__(self, num_vec_classes=6, hidden=8):
        super().__init__()
        self.embed = nn.Embedding(num_vec_classes, hidden)
        self.time = nn.Embedding(10, hidden)
        self.out = nn.Linear(hidden, num_vec_classes - 1)

    def forward(self, sample, timestep):
        h = self.embed(sample) + self.time(timestep)
        logits = self.out(torch.tanh(h)).permute(0, 2, 1)
        return F.log_softmax(logits, dim=1)


class VQDiffusionLoopBody(nn.Module):
    def __init__(self):
        super().__init__()
        self.transformer = TinyVQTransformer()
        self.scheduler = VQDiffusionScheduler(num_vec_classes=6, num_train_timesteps=10)
        self.scheduler.set_timesteps(10)

    def forward(self, sample, t, generator=None):
        model_output = self.transformer(sample, timestep=t)
        model_output = model_output.clamp(-70)
        sample = self.scheduler.step(model_output, timestep=t, sample=sample, generator=generator)["prev_sample"]
        return sample


body = torch.compile(VQDiffusionLoopBody())


def make():
    torch.manual_seed(0)
    model = VQDiffusionLoopBody()
    sample = torch.tensor([[5, 5, 1, 5, 2, 5]])
    ts = model.scheduler.timesteps
    return model, [(sample, ts[0]), (sample, ts[-1])]
