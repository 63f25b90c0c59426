"""diffusers ControlNetModel.forward: channel-order string switch, timestep normalisation, text_time added conds, guess-mode logspace scales (no break).

Source: huggingface/diffusers@58eb52c080:src/diffusers/models/controlnets/controlnet.py:603-801
Kept: the rgb/bgr/ValueError channel order, attention mask to bias, timestep
tensor handling, the addition_embed_type "text_time" branch with its
`"text_embeds" not in added_cond_kwargs` ValueErrors, conv_in + cond
embedding, the down-block loop with hasattr(has_cross_attention), the
controlnet zero-conv loop building tuples, guess_mode's torch.logspace scales
zipped with the residuals, global_pool_conditions, the return_dict tuple.
Simplified: blocks are convs; 2 down blocks; time embedding is linear.
"""
import torch
from torch import nn


class Config:
    controlnet_conditioning_channel_order = "bgr"
    addition_embed_type = "text_time"
    global_pool_conditions = False


class DownBlock(nn.Module):
    has_cross_attention = False

    def __init__(self, ch):
        super().__init__()
        self.conv = nn.Conv2d(ch, ch, 3, stride=2, padding=1)

    def forward(self, hidden_states, temb=None):
        out = self.conv(hidden_states) + temb[:, :, None, None]
        return out, (out,)


class ControlNetModel(nn.Module):
    def __init__(self, ch=4):
        super().__init__()
        self.config = Config()
        self.time_embedding = nn.Linear(1, ch)
        self.add_time_proj = nn.Identity()
        self.add_embedding = nn.Linear(2 + 2, ch)
        self.class_embedding = None
        self.conv_in = nn.Conv2d(ch, ch, 3, padding=1)
        self.controlnet_cond_embedding = nn.Conv2d(3, ch, 3, padding=1)
        self.down_blocks = nn.ModuleList([DownBlock(ch), DownBlock(ch)])
        self.mid_block = None
        self.controlnet_down_blocks = nn.ModuleList([nn.Conv2d(ch, ch, 1) for _ in range(3)])
        self.controlnet_mid_block = nn.Conv2d(ch, ch, 1)

    def forward(self, sample, timestep, encoder_hidden_states, controlnet_cond, conditioning_scale=1.0, attention_mask=None, added_cond_kwargs=None, guess_mode=False, return_dict=True):
        channel_order = self.config.controlnet_conditioning_channel_order
        if channel_order == "rgb":
            ...
        elif channel_order == "bgr":
            controlnet_cond = torch.flip(controlnet_cond, dims=[1])
        else:
            raise ValueError(f"unknown `controlnet_conditioning_channel_order`: {channel_order}")
        if attention_mask is not None:
            attention_mask = (1 - attention_mask.to(sample.dtype)) * -10000.0
            attention_mask = attention_mask.unsqueeze(1)
        timesteps = timestep
        if not torch.is_tensor(timesteps):
            timesteps = torch.tensor([timesteps], dtype=torch.float32, device=sample.device)
        elif len(timesteps.shape) == 0:
            timesteps = timesteps[None].to(sample.device)
        timesteps = timesteps.expand(sample.shape[0])
        emb = self.time_embedding(timesteps[:, None].float())
        aug_emb = None
        if self.config.addition_embed_type is not None:
            if self.config.addition_embed_type == "text_time":
                if "text_embeds" not in added_cond_kwargs:
                    raise ValueError(f"{self.__class__} has the config param `addition_embed_type` set to 'text_time' which requires the keyword argument `text_embeds`")
                text_embeds = added_cond_kwargs.get("text_embeds")
                if "time_ids" not in added_cond_kwargs:
                    raise ValueError(f"{self.__class__} has the config param `addition_embed_type` set to 'text_time' which requires the keyword argument `time_ids`")
                time_ids = added_cond_kwargs.get("time_ids")
                time_embeds = self.add_time_proj(time_ids.flatten())
                time_embeds = time_embeds.reshape((text_embeds.shape[0], -1))
                add_embeds = torch.concat([text_embeds, time_embeds], dim=-1)
                add_embeds = add_embeds.to(emb.dtype)
                aug_emb = self.add_embedding(add_embeds)
        emb = emb + aug_emb if aug_emb is not None else emb
        sample = self.conv_in(sample)
        controlnet_cond = self.controlnet_cond_embedding(controlnet_cond)
        sample = sample + controlnet_cond
        down_block_res_samples = (sample,)
        for downsample_block in self.down_blocks:
            if hasattr(downsample_block, "has_cross_attention") and downsample_block.has_cross_attention:
                raise NotImplementedError
            else:
                sample, res_samples = downsample_block(hidden_states=sample, temb=emb)
            down_block_res_samples += res_samples
        controlnet_down_block_res_samples = ()
        for down_block_res_sample, controlnet_block in zip(down_block_res_samples, self.controlnet_down_blocks):
            down_block_res_sample = controlnet_block(down_block_res_sample)
            controlnet_down_block_res_samples = controlnet_down_block_res_samples + (down_block_res_sample,)
        down_block_res_samples = controlnet_down_block_res_samples
        mid_block_res_sample = self.controlnet_mid_block(sample)
        if guess_mode and not self.config.global_pool_conditions:
            scales = torch.logspace(-1, 0, len(down_block_res_samples) + 1, device=sample.device)
            scales = scales * conditioning_scale
            down_block_res_samples = [sample * scale for sample, scale in zip(down_block_res_samples, scales)]
            mid_block_res_sample = mid_block_res_sample * scales[-1]
        else:
            down_block_res_samples = [sample * conditioning_scale for sample in down_block_res_samples]
            mid_block_res_sample = mid_block_res_sample * conditioning_scale
        if self.config.global_pool_conditions:
            down_block_res_samples = [torch.mean(sample, dim=(2, 3), keepdim=True) for sample in down_block_res_samples]
            mid_block_res_sample = torch.mean(mid_block_res_sample, dim=(2, 3), keepdim=True)
        if not return_dict:
            return (down_block_res_samples, mid_block_res_sample)
        return {"down_block_res_samples": down_block_res_samples, "mid_block_res_sample": mid_block_res_sample}


controlnet = torch.compile(ControlNetModel())


def make():
    torch.manual_seed(0)
    args = (torch.randn(1, 4, 8, 8), torch.tensor(10.0), torch.randn(1, 3, 4), torch.randn(1, 3, 8, 8))
    conds = {"text_embeds": torch.randn(1, 2), "time_ids": torch.randn(1, 2)}
    return ControlNetModel(), [(*args, 1.0, None, conds), (*args, 0.5, None, conds, True, False)]
