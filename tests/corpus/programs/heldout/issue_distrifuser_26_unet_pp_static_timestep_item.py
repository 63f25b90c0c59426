"""DistriFusion's patch-parallel UNet wrapper with CUDA graphs: a 0-d timestep is copied into the static inputs with `timestep.item()` per batch row, and the warm-up counter picks which captured graph to replay.

Source: https://github.com/mit-han-lab/distrifuser/issues/26
Code: mit-han-lab/distrifuser@084aabe002ae9de21d36cc8a0acd066e35c8e20a:distrifuser/models/distri_sdxl_unet_pp.py:47-200
(the issue compiles `pipeline.pipeline.unet = torch.compile(pipeline.pipeline.unet)`
and Dynamo reports the `Tensor.item()` break at line 94 of this file).
Kept: DistriUNetPP.forward as written for one device (the static-input copy with
its 0-d / 1-d / Python-number timestep branches, the counter-selected graph
replay, the world_size == 1 eager path, `record`, the output wrapping and
`self.counter += 1`), DistriConfig's fields and the BaseModel state.
Simplified: a captured CUDA graph is a CPU stand-in whose `replay()` reruns the
model on the static inputs into a static output; no distributed all_gather
branches; the SDXL UNet is a 1x1 conv conditioned on timestep and text mean;
4 latent channels, 8x8.
"""
from dataclasses import dataclass

import torch
from torch import nn


@dataclass
class DistriConfig:
    world_size: int = 1
    n_device_per_batch: int = 1
    do_classifier_free_guidance: bool = True
    split_batch: bool = True
    warmup_steps: int = 1
    use_cuda_graph: bool = True


class UNet2DConditionOutput:
    def __init__(self, sample):
        self.sample = sample


class TinyUNet(nn.Module):
    def __init__(self, channels=4, text_dim=8):
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, 1)
        self.time_proj = nn.Linear(1, channels)
        self.text_proj = nn.Linear(text_dim, channels)

    def forward(self, sample, timestep, encoder_hidden_states, return_dict=False, **kwargs):
        if not torch.is_tensor(timestep):
            timestep = torch.tensor([timestep], dtype=torch.float32)
        timestep = timestep.float().reshape(-1, 1).expand(sample.shape[0], 1)
        cond = self.time_proj(timestep / 1000) + self.text_proj(encoder_hidden_states.mean(1))
        return (self.conv(sample) + cond[:, :, None, None],)


class ReplayGraph:
    """CPU stand-in for a captured torch.cuda.CUDAGraph: replay reruns the captured call."""

    def __init__(self, model, static_inputs, static_output):
        self.model = model
        self.static_inputs = static_inputs
        self.static_output = static_output

    def replay(self):
        out = self.model(
            self.static_inputs["sample"], self.static_inputs["timestep"], self.static_inputs["encoder_hidden_states"]
        )[0]
        self.static_output.copy_(out)


class BaseModel(nn.Module):
    def __init__(self, model, distri_config: DistriConfig):
        super().__init__()
        self.model = model
        self.distri_config = distri_config
        self.comm_manager = None

        self.buffer_list = None
        self.output_buffer = None
        self.counter = 0

        # for cuda graph
        self.static_inputs = None
        self.static_outputs = None
        self.cuda_graphs = None

    def synchronize(self):
        pass


class DistriUNetPP(BaseModel):  # for Patch Parallelism
    def forward(
        self,
        sample: torch.FloatTensor,
        timestep,
        encoder_hidden_states: torch.Tensor,
        class_labels=None,
        timestep_cond=None,
        attention_mask=None,
        cross_attention_kwargs=None,
        added_cond_kwargs=None,
        down_block_additional_residuals=None,
        mid_block_additional_residual=None,
        down_intrablock_additional_residuals=None,
        encoder_attention_mask=None,
        return_dict: bool = True,
        record: bool = False,
    ):
        distri_config = self.distri_config
        b, c, h, w = sample.shape
        assert (
            class_labels is None
            and timestep_cond is None
            and attention_mask is None
            and cross_attention_kwargs is None
            and down_block_additional_residuals is None
            and mid_block_additional_residual is None
            and down_intrablock_additional_residuals is None
            and encoder_attention_mask is None
        )

        if distri_config.use_cuda_graph and not record:
            static_inputs = self.static_inputs

            assert static_inputs["sample"].shape == sample.shape
            static_inputs["sample"].copy_(sample)
            if torch.is_tensor(timestep):
                if timestep.ndim == 0:
                    for b in range(static_inputs["timestep"].shape[0]):
                        static_inputs["timestep"][b] = timestep.item()
                else:
                    assert static_inputs["timestep"].shape == timestep.shape
                    static_inputs["timestep"].copy_(timestep)
            else:
                for b in range(static_inputs["timestep"].shape[0]):
                    static_inputs["timestep"][b] = timestep
            assert static_inputs["encoder_hidden_states"].shape == encoder_hidden_states.shape
            static_inputs["encoder_hidden_states"].copy_(encoder_hidden_states)
            if added_cond_kwargs is not None:
                for k in added_cond_kwargs:
                    assert static_inputs["added_cond_kwargs"][k].shape == added_cond_kwargs[k].shape
                    static_inputs["added_cond_kwargs"][k].copy_(added_cond_kwargs[k])

            if self.counter <= distri_config.warmup_steps:
                graph_idx = 0
            elif self.counter == distri_config.warmup_steps + 1:
                graph_idx = 1
            else:
                graph_idx = 2

            self.cuda_graphs[graph_idx].replay()
            output = self.static_outputs[graph_idx]
        else:
            if distri_config.world_size == 1:
                output = self.model(
                    sample,
                    timestep,
                    encoder_hidden_states,
                    class_labels=class_labels,
                    timestep_cond=timestep_cond,
                    attention_mask=attention_mask,
                    cross_attention_kwargs=cross_attention_kwargs,
                    added_cond_kwargs=added_cond_kwargs,
                    down_block_additional_residuals=down_block_additional_residuals,
                    mid_block_additional_residual=mid_block_additional_residual,
                    down_intrablock_additional_residuals=down_intrablock_additional_residuals,
                    encoder_attention_mask=encoder_attention_mask,
                    return_dict=False,
                )[0]
            if record:
                if self.static_inputs is None:
                    self.static_inputs = {
                        "sample": sample,
                        "timestep": timestep,
                        "encoder_hidden_states": encoder_hidden_states,
                        "added_cond_kwargs": added_cond_kwargs,
                    }
                self.synchronize()

        if return_dict:
            output = UNet2DConditionOutput(sample=output)
        else:
            output = (output,)

        self.counter += 1
        return output


def prepare(unet: DistriUNetPP, sample, timestep, encoder_hidden_states, counter=0):
    """DistriSDXLPipeline.prepare: record the static inputs once, then capture one graph per phase."""
    with torch.no_grad():
        unet(sample.clone(), timestep.clone(), encoder_hidden_states.clone(), return_dict=False, record=True)
    unet.static_outputs = [torch.empty_like(sample) for _ in range(3)]
    unet.cuda_graphs = [ReplayGraph(unet.model, unet.static_inputs, out) for out in unet.static_outputs]
    unet.counter = counter


def make():
    torch.manual_seed(0)
    sample = torch.randn(2, 4, 8, 8)
    ehs = torch.randn(2, 3, 8)
    unet = DistriUNetPP(TinyUNet(), DistriConfig())
    prepare(unet, sample, torch.tensor([999.0, 999.0]), ehs)
    return unet, [
        (sample, torch.tensor(981.0), ehs),
        (sample * 0.5, torch.tensor([961.0, 961.0]), ehs),
        (sample, 941, ehs),
    ]


def main():
    unet = DistriUNetPP(TinyUNet(), DistriConfig())
    return torch.compile(unet)
