"""DPT depth estimation after the ViT: out_indices selection, reassemble stage with a projected readout token and int(math.sqrt(seq_len)) grids, feature fusion that interpolates when shapes differ, depth head.

Source: huggingface/transformers@006d6f916577883a8693310a3f22ee457c7ca133:src/transformers/models/dpt/modeling_dpt.py:330-470,560-690
Kept: DPTReassembleStage (readout_type "project"/"add" branches, cls-token split, math.sqrt size,
projects and resize layers), DPTPreActResidualLayer (use_batch_norm branches), DPTFeatureFusionLayer
(`len(inputs) == 2`, `x.shape != inputs[1].shape` -> bilinear interpolate, scale_factor=2 upsample),
DPTNeck (isinstance(list) and length ValueErrors, fusion loop with res_conv_unit1 None on the first block),
DPTDepthEstimationHead (in_index), and the tail of DPTForDepthEstimation.forward
(list comprehension over hidden_states[1:] with `idx in self.config.out_indices`, squeeze, tuple output).
Simplified: the ViT backbone is not run: the module takes its tuple of hidden states (embeddings +
one per layer); tiny config (hidden 8, neck sizes 4/4/8/8, channels 8), labels unsupported as in the original.
"""
import math
from typing import List

import torch
from torch import nn


class DPTConfig:
    hidden_size = 8
    hidden_act = "gelu"
    neck_hidden_sizes = [4, 4, 8, 8]
    channels = 8
    readout_type = "project"
    use_batch_norm = False
    out_indices = [0, 1, 2, 3]
    in_index = -1
    output_hidden_states = False
    use_return_dict = False


ACT2FN = {"gelu": nn.GELU(), "relu": nn.ReLU()}


class DPTReassembleStage(nn.Module):
    def __init__(self, config):
        super().__init__()

        self.config = config
        out_channels = config.neck_hidden_sizes

        self.projects = nn.ModuleList(
            [
                nn.Conv2d(in_channels=config.hidden_size, out_channels=out_channel, kernel_size=1)
                for out_channel in out_channels
            ]
        )

        self.resize_layers = nn.ModuleList(
            [
                nn.ConvTranspose2d(
                    in_channels=out_channels[0], out_channels=out_channels[0], kernel_size=4, stride=4, padding=0
                ),
                nn.ConvTranspose2d(
                    in_channels=out_channels[1], out_channels=out_channels[1], kernel_size=2, stride=2, padding=0
                ),
                nn.Identity(),
                nn.Conv2d(
                    in_channels=out_channels[3], out_channels=out_channels[3], kernel_size=3, stride=2, padding=1
                ),
            ]
        )
        if config.readout_type == "project":
            self.readout_projects = nn.ModuleList()
            for _ in range(len(self.projects)):
                self.readout_projects.append(
                    nn.Sequential(nn.Linear(2 * config.hidden_size, config.hidden_size), ACT2FN[config.hidden_act])
                )

    def forward(self, hidden_states):
        out = []

        for i, hidden_state in enumerate(hidden_states):
            # reshape to (B, C, H, W)
            hidden_state, cls_token = hidden_state[:, 1:], hidden_state[:, 0]
            batch_size, sequence_length, num_channels = hidden_state.shape
            size = int(math.sqrt(sequence_length))
            hidden_state = hidden_state.reshape(batch_size, size, size, num_channels)
            hidden_state = hidden_state.permute(0, 3, 1, 2).contiguous()

            feature_shape = hidden_state.shape
            if self.config.readout_type == "project":
                # reshape to (B, H*W, C)
                hidden_state = hidden_state.flatten(2).permute((0, 2, 1))
                readout = cls_token.unsqueeze(1).expand_as(hidden_state)
                # concatenate the readout token to the hidden states and project
                hidden_state = self.readout_projects[i](torch.cat((hidden_state, readout), -1))
                # reshape back to (B, C, H, W)
                hidden_state = hidden_state.permute(0, 2, 1).reshape(feature_shape)
            elif self.config.readout_type == "add":
                hidden_state = hidden_state.flatten(2) + cls_token.unsqueeze(-1)
                hidden_state = hidden_state.reshape(feature_shape)
            hidden_state = self.projects[i](hidden_state)
            hidden_state = self.resize_layers[i](hidden_state)
            out.append(hidden_state)

        return out


class DPTPreActResidualLayer(nn.Module):
    def __init__(self, config):
        super().__init__()

        self.use_batch_norm = config.use_batch_norm
        self.act1 = ACT2FN["relu"]
        self.conv1 = nn.Conv2d(
            config.channels,
            config.channels,
            kernel_size=3,
            stride=1,
            padding=1,
            bias=not self.use_batch_norm,
        )

        self.act2 = ACT2FN["relu"]
        self.conv2 = nn.Conv2d(
            config.channels,
            config.channels,
            kernel_size=3,
            stride=1,
            padding=1,
            bias=not self.use_batch_norm,
        )

        if self.use_batch_norm:
            self.batch_norm1 = nn.BatchNorm2d(config.channels)
            self.batch_norm2 = nn.BatchNorm2d(config.channels)

    def forward(self, hidden_state: torch.Tensor) -> torch.Tensor:
        residual = hidden_state
        x = self.act1(hidden_state)

        x = self.conv1(x)

        if self.use_batch_norm:
            x = self.batch_norm1(x)

        x = self.act2(x)
        x = self.conv2(x)

        if self.use_batch_norm:
            x = self.batch_norm2(x)

        return x + residual


class DPTFeatureFusionLayer(nn.Module):
    def __init__(self, config, expand=False, align_corners=True):
        super().__init__()

        self.expand = expand
        self.align_corners = align_corners

        self.out_channels = config.channels
        if self.expand:
            self.out_channels = config.channels // 2

        out_channels = config.channels // 2 if self.expand else config.channels
        self.project = nn.Conv2d(config.channels, out_channels, kernel_size=1, bias=True)

        self.res_conv_unit1 = DPTPreActResidualLayer(config)

        self.res_conv_unit2 = DPTPreActResidualLayer(config)

    def forward(self, *inputs):
        x = inputs[0]
        if len(inputs) == 2:
            if x.shape != inputs[1].shape:
                res = nn.functional.interpolate(
                    inputs[1], size=(x.shape[2], x.shape[3]), mode="bilinear", align_corners=False
                )
            else:
                res = inputs[1]
            x = x + self.res_conv_unit1(res)

        x = self.res_conv_unit2(x)
        x = nn.functional.interpolate(x, scale_factor=2, mode="bilinear", align_corners=self.align_corners)
        x = self.project(x)

        return x


class DPTNeck(nn.Module):
    def __init__(self, config):
        super().__init__()

        self.config = config

        # postprocessing
        self.reassemble_stage = DPTReassembleStage(config)
        self.convs = nn.ModuleList()
        for channel in config.neck_hidden_sizes:
            self.convs.append(nn.Conv2d(channel, config.channels, kernel_size=3, padding=1, bias=False))

        # fusion
        self.fusion_blocks = nn.ModuleList()
        for _ in range(len(self.convs)):
            self.fusion_blocks.append(DPTFeatureFusionLayer(config))
        self.fusion_blocks[0].res_conv_unit1 = None

    def forward(self, hidden_states: List[torch.Tensor]) -> List[torch.Tensor]:
        if not isinstance(hidden_states, list):
            raise ValueError("hidden_states should be a list of tensors")

        if len(hidden_states) != len(self.config.neck_hidden_sizes):
            raise ValueError("The number of hidden states should be equal to the number of neck hidden sizes.")

        # postprocess hidden states
        features = self.reassemble_stage(hidden_states)

        features = [self.convs[i](feature) for i, feature in enumerate(features)]

        # fusion blocks
        output = []
        out = self.fusion_blocks[0](features[-1])
        for i in range(1, len(self.fusion_blocks)):
            out = self.fusion_blocks[i](out, features[-(i + 1)])
            output.append(out)

        return output


class DPTDepthEstimationHead(nn.Module):
    def __init__(self, config):
        super().__init__()

        self.config = config

        features = config.channels
        self.head = nn.Sequential(
            nn.Conv2d(features, features // 2, kernel_size=3, stride=1, padding=1),
            nn.Upsample(scale_factor=2, mode="bilinear", align_corners=True),
            nn.Conv2d(features // 2, 32, kernel_size=3, stride=1, padding=1),
            ACT2FN["relu"],
            nn.Conv2d(32, 1, kernel_size=1, stride=1, padding=0),
            ACT2FN["relu"],
        )

    def forward(self, hidden_states: List[torch.Tensor]) -> torch.Tensor:
        # use last features
        hidden_states = hidden_states[self.config.in_index]

        logits = self.head(hidden_states)

        return logits


class DPTDepthFromHiddenStates(nn.Module):
    """DPTForDepthEstimation's neck and head, run on the hidden states its ViT returns."""

    def __init__(self, config):
        super().__init__()
        self.config = config
        self.neck = DPTNeck(config)
        self.head = DPTDepthEstimationHead(config)

    def forward(self, all_hidden_states, labels=None, output_hidden_states=None):
        output_hidden_states = (
            output_hidden_states if output_hidden_states is not None else self.config.output_hidden_states
        )
        hidden_states = all_hidden_states

        # only keep certain features based on config.out_indices
        # note that the hidden_states also include the initial embeddings
        hidden_states = [feature for idx, feature in enumerate(hidden_states[1:]) if idx in self.config.out_indices]

        hidden_states = self.neck(hidden_states)

        logits = self.head(hidden_states)
        logits = logits.squeeze(dim=1)

        loss = None
        if labels is not None:
            raise NotImplementedError("Training is not implemented yet")

        output = (logits,) + ((all_hidden_states,) if output_hidden_states else ())
        return ((loss,) + output) if loss is not None else output


depth = torch.compile(DPTDepthFromHiddenStates(DPTConfig()).eval())


def make():
    torch.manual_seed(0)
    model = DPTDepthFromHiddenStates(DPTConfig()).eval()
    # embeddings + 4 layers, CLS + 4x4 patches
    square = tuple(torch.randn(1, 17, 8) for _ in range(5))
    # CLS + 5x5 patches: the stride-2 stage gives 3x3, so fusion has to interpolate
    odd = tuple(torch.randn(1, 26, 8) for _ in range(5))
    return model, [
        (square,),
        (odd, None, True),
        (square, torch.zeros(1, 32, 32)),
    ]


RAISING_INPUTS = {2: "NotImplementedError"}
