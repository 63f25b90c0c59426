"""diffusers AmusedScheduler.step: `timestep == 0` on a tensor timestep, step index by nonzero(), random-top-k re-masking.

Source: huggingface/diffusers@06bb136441:src/diffusers/schedulers/scheduling_amused.py:12-133
Kept: gumbel_noise, mask_by_random_topk, set_timesteps (temperature tuple),
step() verbatim: two_dim_input reshape, unknown_map, multinomial sampling with
the generator/cpu-half handling, the `timestep == 0` branch,
`(self.timesteps == timestep).nonzero()`, cosine/linear masking schedule,
mask_len min/max clamps, gather of selected probs, re-masking; return_dict
tuple. The step is compiled together with the transformer call, the way the
aMUSEd pipeline loop runs them.
Simplified: ConfigMixin/register_to_config become a plain config object; the
UVit2D transformer is an embedding + linear head over a 4x4 token grid with a
codebook of 8 (+1 mask token).
"""
import math
from dataclasses import dataclass
from typing import List, Optional, Tuple, Union

import torch
from torch import nn


def gumbel_noise(t, generator=None):
    device = generator.device if generator is not None else t.device
    noise = torch.zeros_like(t, device=device).uniform_(0, 1, generator=generator).to(t.device)
    return -torch.log((-torch.log(noise.clamp(1e-20))).clamp(1e-20))


def mask_by_random_topk(mask_len, probs, temperature=1.0, generator=None):
    confidence = torch.log(probs.clamp(1e-20)) + temperature * gumbel_noise(probs, generator=generator)
    sorted_confidence = torch.sort(confidence, dim=-1).values
    cut_off = torch.gather(sorted_confidence, 1, mask_len.long())
    masking = confidence < cut_off
    return masking


@dataclass
class AmusedSchedulerOutput:
    prev_sample: torch.Tensor
    pred_original_sample: torch.Tensor = None


class FrozenConfig:
    def __init__(self, **kwargs):
        self.__dict__.update(kwargs)


class AmusedScheduler:
    order = 1

    temperatures: torch.Tensor

    def __init__(
        self,
        mask_token_id: int,
        masking_schedule: str = "cosine",
    ):
        self.config = FrozenConfig(mask_token_id=mask_token_id, masking_schedule=masking_schedule)
        self.temperatures = None
        self.timesteps = None

    def set_timesteps(
        self,
        num_inference_steps: int,
        temperature: Union[int, Tuple[int, int], List[int]] = (2, 0),
        device: Union[str, torch.device] = None,
    ):
        self.timesteps = torch.arange(num_inference_steps, device=device).flip(0)

        if isinstance(temperature, (tuple, list)):
            self.temperatures = torch.linspace(temperature[0], temperature[1], num_inference_steps, device=device)
        else:
            self.temperatures = torch.linspace(temperature, 0.01, num_inference_steps, device=device)

    def step(
        self,
        model_output: torch.Tensor,
        timestep: torch.long,
        sample: torch.LongTensor,
        starting_mask_ratio: int = 1,
        generator: Optional[torch.Generator] = None,
        return_dict: bool = True,
    ) -> Union[AmusedSchedulerOutput, Tuple]:
        two_dim_input = sample.ndim == 3 and model_output.ndim == 4

        if two_dim_input:
            batch_size, codebook_size, height, width = model_output.shape
            sample = sample.reshape(batch_size, height * width)
            model_output = model_output.reshape(batch_size, codebook_size, height * width).permute(0, 2, 1)

        unknown_map = sample == self.config.mask_token_id

        probs = model_output.softmax(dim=-1)

        device = probs.device
        probs_ = probs.to(generator.device) if generator is not None else probs
        if probs_.device.type == "cpu" and probs_.dtype != torch.float32:
            probs_ = probs_.float()
        probs_ = probs_.reshape(-1, probs.size(-1))
        pred_original_sample = torch.multinomial(probs_, 1, generator=generator).to(device=device)
        pred_original_sample = pred_original_sample[:, 0].view(*probs.shape[:-1])
        pred_original_sample = torch.where(unknown_map, pred_original_sample, sample)

        if timestep == 0:
            prev_sample = pred_original_sample
        else:
            seq_len = sample.shape[1]
            step_idx = (self.timesteps == timestep).nonzero()
            ratio = (step_idx + 1) / len(self.timesteps)

            if self.config.masking_schedule == "cosine":
                mask_ratio = torch.cos(ratio * math.pi / 2)
            elif self.config.masking_schedule == "linear":
                mask_ratio = 1 - ratio
            else:
                raise ValueError(f"unknown masking schedule {self.config.masking_schedule}")

            mask_ratio = starting_mask_ratio * mask_ratio

            mask_len = (seq_len * mask_ratio).floor()
            mask_len = torch.min(unknown_map.sum(dim=-1, keepdim=True) - 1, mask_len)
            mask_len = torch.max(torch.tensor([1], device=model_output.device), mask_len)

            selected_probs = torch.gather(probs, -1, pred_original_sample[:, :, None])[:, :, 0]
            selected_probs = torch.where(unknown_map, selected_probs, torch.finfo(selected_probs.dtype).max)

            masking = mask_by_random_topk(mask_len, selected_probs, self.temperatures[step_idx], generator)

            prev_sample = torch.where(masking, self.config.mask_token_id, pred_original_sample)

        if two_dim_input:
            prev_sample = prev_sample.reshape(batch_size, height, width)
            pred_original_sample = pred_original_sample.reshape(batch_size, height, width)

        if not return_dict:
            return (prev_sample, pred_original_sample)

        return AmusedSchedulerOutput(prev_sample, pred_original_sample)


class TinyUVit2D(nn.Module):
    def __init__(self, codebook_size=8, hidden=8):
        super().__init__()
        self.embed = nn.Embedding(codebook_size + 1, hidden)
        self.head = nn.Linear(hidden, codebook_size)

    def forward(self, input_ids):
        h = self.embed(input_ids)
        logits = self.head(h)
        return logits.permute(0, 3, 1, 2)


class AmusedDenoiseStep(nn.Module):
    def __init__(self, num_inference_steps=4):
        super().__init__()
        self.transformer = TinyUVit2D()
        self.scheduler = AmusedScheduler(mask_token_id=8)
        self.scheduler.set_timesteps(num_inference_steps, (2, 0))

    def forward(self, latents, timestep):
        model_output = self.transformer(latents)
        latents = self.scheduler.step(
            model_output=model_output,
            timestep=timestep,
            sample=latents,
            generator=None,
        ).prev_sample
        return latents


denoise_step = torch.compile(AmusedDenoiseStep())


def make():
    torch.manual_seed(0)
    step = AmusedDenoiseStep()
    latents = torch.full((1, 4, 4), 8, dtype=torch.long)
    partly = latents.clone()
    partly[0, 0, :2] = torch.tensor([1, 2])
    return step, [(latents, torch.tensor(3)), (partly, torch.tensor(0))]
