"""VAE Decoder.forward reads `next(iter(self.up_blocks.parameters())).dtype` between conv_in and the mid block.

Source: huggingface/diffusers#12501 (https://github.com/huggingface/diffusers/issues/12501)
Decoder code: huggingface/diffusers@04957c2003faa079d73e5a749655ccc0ba4bddbf:src/diffusers/models/autoencoders/vae.py
(Decoder.__init__/forward, the lines the issue quotes).
Kept: Decoder.forward verbatim (upscale_dtype from the up blocks' first parameter, the
gradient-checkpointing branch on `torch.is_grad_enabled() and self.gradient_checkpointing`, the
`latent_embeds is None` post-process branch), the reporter's `model = vae.decoder; model = model.eval();
model.compile()` and `with torch.no_grad()` call.
Simplified: UNetMidBlock2D / UpDecoderBlock2D are reduced to ResNet blocks (+ nearest upsample) that
take `(hidden_states, temb)`; no attention in the mid block; 2 up blocks of 8/16 channels; the reporter's
float16/bfloat16 casts are dropped (CPU float32).
"""
import torch
import torch.nn.functional as F
from torch import nn


class ResnetBlock2D(nn.Module):
    def __init__(self, in_channels, out_channels, groups=4, eps=1e-6):
        super().__init__()
        self.norm1 = nn.GroupNorm(num_groups=groups, num_channels=in_channels, eps=eps)
        self.conv1 = nn.Conv2d(in_channels, out_channels, kernel_size=3, stride=1, padding=1)
        self.norm2 = nn.GroupNorm(num_groups=groups, num_channels=out_channels, eps=eps)
        self.dropout = nn.Dropout(0.0)
        self.conv2 = nn.Conv2d(out_channels, out_channels, kernel_size=3, stride=1, padding=1)
        self.nonlinearity = nn.SiLU()
        self.conv_shortcut = None
        if in_channels != out_channels:
            self.conv_shortcut = nn.Conv2d(in_channels, out_channels, kernel_size=1)

    def forward(self, input_tensor, temb):
        hidden_states = input_tensor
        hidden_states = self.norm1(hidden_states)
        hidden_states = self.nonlinearity(hidden_states)
        hidden_states = self.conv1(hidden_states)
        hidden_states = self.norm2(hidden_states)
        hidden_states = self.nonlinearity(hidden_states)
        hidden_states = self.dropout(hidden_states)
        hidden_states = self.conv2(hidden_states)
        if self.conv_shortcut is not None:
            input_tensor = self.conv_shortcut(input_tensor)
        return input_tensor + hidden_states


class UNetMidBlock2D(nn.Module):
    def __init__(self, in_channels, resnet_groups):
        super().__init__()
        self.resnets = nn.ModuleList([ResnetBlock2D(in_channels, in_channels, resnet_groups)])

    def forward(self, hidden_states, temb=None):
        for resnet in self.resnets:
            hidden_states = resnet(hidden_states, temb)
        return hidden_states


class UpDecoderBlock2D(nn.Module):
    def __init__(self, num_layers, in_channels, out_channels, add_upsample, resnet_groups):
        super().__init__()
        resnets = []
        for i in range(num_layers):
            input_channels = in_channels if i == 0 else out_channels
            resnets.append(ResnetBlock2D(input_channels, out_channels, resnet_groups))
        self.resnets = nn.ModuleList(resnets)
        self.upsamplers = nn.ModuleList([nn.Conv2d(out_channels, out_channels, 3, padding=1)]) if add_upsample else None

    def forward(self, hidden_states, temb=None):
        for resnet in self.resnets:
            hidden_states = resnet(hidden_states, temb=temb)
        if self.upsamplers is not None:
            for upsampler in self.upsamplers:
                hidden_states = F.interpolate(hidden_states, scale_factor=2.0, mode="nearest")
                hidden_states = upsampler(hidden_states)
        return hidden_states


class Decoder(nn.Module):
    def __init__(
        self,
        in_channels=4,
        out_channels=3,
        block_out_channels=(8, 16),
        layers_per_block=1,
        norm_num_groups=4,
    ):
        super().__init__()
        self.layers_per_block = layers_per_block

        self.conv_in = nn.Conv2d(in_channels, block_out_channels[-1], kernel_size=3, stride=1, padding=1)

        self.up_blocks = nn.ModuleList([])

        # mid
        self.mid_block = UNetMidBlock2D(in_channels=block_out_channels[-1], resnet_groups=norm_num_groups)

        # up
        reversed_block_out_channels = list(reversed(block_out_channels))
        output_channel = reversed_block_out_channels[0]
        for i in range(len(block_out_channels)):
            prev_output_channel = output_channel
            output_channel = reversed_block_out_channels[i]

            is_final_block = i == len(block_out_channels) - 1

            up_block = UpDecoderBlock2D(
                num_layers=self.layers_per_block + 1,
                in_channels=prev_output_channel,
                out_channels=output_channel,
                add_upsample=not is_final_block,
                resnet_groups=norm_num_groups,
            )
            self.up_blocks.append(up_block)
            prev_output_channel = output_channel

        # out
        self.conv_norm_out = nn.GroupNorm(num_channels=block_out_channels[0], num_groups=norm_num_groups, eps=1e-6)
        self.conv_act = nn.SiLU()
        self.conv_out = nn.Conv2d(block_out_channels[0], out_channels, 3, padding=1)

        self.gradient_checkpointing = False

    def _gradient_checkpointing_func(self, module, *args):
        return torch.utils.checkpoint.checkpoint(module, *args, use_reentrant=False)

    def forward(self, sample, latent_embeds=None):
        r"""The forward method of the `Decoder` class."""

        sample = self.conv_in(sample)

        upscale_dtype = next(iter(self.up_blocks.parameters())).dtype
        if torch.is_grad_enabled() and self.gradient_checkpointing:
            # middle
            sample = self._gradient_checkpointing_func(self.mid_block, sample, latent_embeds)
            sample = sample.to(upscale_dtype)

            # up
            for up_block in self.up_blocks:
                sample = self._gradient_checkpointing_func(up_block, sample, latent_embeds)
        else:
            # middle
            sample = self.mid_block(sample, latent_embeds)
            sample = sample.to(upscale_dtype)

            # up
            for up_block in self.up_blocks:
                sample = up_block(sample, latent_embeds)

        # post-process
        if latent_embeds is None:
            sample = self.conv_norm_out(sample)
        else:
            sample = self.conv_norm_out(sample, latent_embeds)
        sample = self.conv_act(sample)
        sample = self.conv_out(sample)

        return sample


def main():
    model = Decoder()
    model = model.eval()
    sample_img = torch.randn(1, 4, 8, 8)
    model.compile()
    with torch.no_grad():
        return model(sample_img)


def make():
    torch.manual_seed(0)
    return Decoder().eval(), [(torch.randn(1, 4, 8, 8),)]
