"""MobileNetV2 with TensorFlow "SAME" padding computed from int(features.shape[...]) in every conv layer.

Source: huggingface/transformers@05c90388e5ca4433d94605afebffa994a624c2ea:src/transformers/models/mobilenet_v2/modeling_mobilenet_v2.py:180-420
Kept: make_divisible, apply_depth_multiplier, apply_tf_padding (int() of shapes, stride/kernel/dilation
tuples read off the conv module, the modulo branches, max()), MobileNetV2ConvLayer (config.tf_padding, groups
validation, optional norm/activation with the str/callable activation choice), MobileNetV2InvertedResidual
(use_residual), MobileNetV2Stem (first_layer_is_expansion), the model's stem -> layers -> conv_1x1 -> pooler
forward with output_hidden_states, and the classification head.
Simplified: 3 inverted-residual layers instead of 16 (channel/stride tables shortened, no output_stride
dilation bookkeeping), depth multiplier 0.25, 1 input channel, 3 labels, tuple outputs.
"""
from typing import Optional, Union

import torch
from torch import nn


class MobileNetV2Config:
    num_channels = 1
    image_size = 16
    depth_multiplier = 0.25
    depth_divisible_by = 8
    min_depth = 8
    expand_ratio = 2.0
    first_layer_is_expansion = True
    finegrained_output = True
    hidden_act = "relu6"
    tf_padding = True
    classifier_dropout_prob = 0.0
    layer_norm_eps = 0.001
    num_labels = 3


ACT2FN = {"relu6": nn.ReLU6()}


def make_divisible(value: int, divisor: int = 8, min_value: Optional[int] = None) -> int:
    if min_value is None:
        min_value = divisor
    new_value = max(min_value, int(value + divisor / 2) // divisor * divisor)
    if new_value < 0.9 * value:
        new_value += divisor
    return int(new_value)


def apply_depth_multiplier(config, channels: int) -> int:
    return make_divisible(int(round(channels * config.depth_multiplier)), config.depth_divisible_by, config.min_depth)


def apply_tf_padding(features: torch.Tensor, conv_layer: nn.Conv2d) -> torch.Tensor:
    in_height = int(features.shape[-2])
    in_width = int(features.shape[-1])
    stride_height, stride_width = conv_layer.stride
    kernel_height, kernel_width = conv_layer.kernel_size
    dilation_height, dilation_width = conv_layer.dilation

    if in_height % stride_height == 0:
        pad_along_height = max(kernel_height - stride_height, 0)
    else:
        pad_along_height = max(kernel_height - (in_height % stride_height), 0)

    if in_width % stride_width == 0:
        pad_along_width = max(kernel_width - stride_width, 0)
    else:
        pad_along_width = max(kernel_width - (in_width % stride_width), 0)

    pad_left = pad_along_width // 2
    pad_right = pad_along_width - pad_left
    pad_top = pad_along_height // 2
    pad_bottom = pad_along_height - pad_top

    padding = (
        pad_left * dilation_width,
        pad_right * dilation_width,
        pad_top * dilation_height,
        pad_bottom * dilation_height,
    )
    return nn.functional.pad(features, padding, "constant", 0.0)


class MobileNetV2ConvLayer(nn.Module):
    def __init__(self, config, in_channels, out_channels, kernel_size, stride=1, groups=1, bias=False, dilation=1,
                 use_normalization=True, use_activation: Union[bool, str] = True, layer_norm_eps=None):
        super().__init__()
        self.config = config

        if in_channels % groups != 0:
            raise ValueError(f"Input channels ({in_channels}) are not divisible by {groups} groups.")
        if out_channels % groups != 0:
            raise ValueError(f"Output channels ({out_channels}) are not divisible by {groups} groups.")

        padding = 0 if config.tf_padding else int((kernel_size - 1) / 2) * dilation

        self.convolution = nn.Conv2d(
            in_channels=in_channels,
            out_channels=out_channels,
            kernel_size=kernel_size,
            stride=stride,
            padding=padding,
            dilation=dilation,
            groups=groups,
            bias=bias,
            padding_mode="zeros",
        )

        if use_normalization:
            self.normalization = nn.BatchNorm2d(
                num_features=out_channels,
                eps=config.layer_norm_eps if layer_norm_eps is None else layer_norm_eps,
                momentum=0.997,
                affine=True,
                track_running_stats=True,
            )
        else:
            self.normalization = None

        if use_activation:
            if isinstance(use_activation, str):
                self.activation = ACT2FN[use_activation]
            elif isinstance(config.hidden_act, str):
                self.activation = ACT2FN[config.hidden_act]
            else:
                self.activation = config.hidden_act
        else:
            self.activation = None

    def forward(self, features):
        if self.config.tf_padding:
            features = apply_tf_padding(features, self.convolution)
        features = self.convolution(features)
        if self.normalization is not None:
            features = self.normalization(features)
        if self.activation is not None:
            features = self.activation(features)
        return features


class MobileNetV2InvertedResidual(nn.Module):
    def __init__(self, config, in_channels, out_channels, stride, dilation=1):
        super().__init__()
        expanded_channels = make_divisible(
            int(round(in_channels * config.expand_ratio)), config.depth_divisible_by, config.min_depth
        )
        if stride not in [1, 2]:
            raise ValueError(f"Invalid stride {stride}.")

        self.use_residual = (stride == 1) and (in_channels == out_channels)

        self.expand_1x1 = MobileNetV2ConvLayer(
            config, in_channels=in_channels, out_channels=expanded_channels, kernel_size=1
        )
        self.conv_3x3 = MobileNetV2ConvLayer(
            config,
            in_channels=expanded_channels,
            out_channels=expanded_channels,
            kernel_size=3,
            stride=stride,
            groups=expanded_channels,
            dilation=dilation,
        )
        self.reduce_1x1 = MobileNetV2ConvLayer(
            config,
            in_channels=expanded_channels,
            out_channels=out_channels,
            kernel_size=1,
            use_activation=False,
        )

    def forward(self, features):
        residual = features
        features = self.expand_1x1(features)
        features = self.conv_3x3(features)
        features = self.reduce_1x1(features)
        return residual + features if self.use_residual else features


class MobileNetV2Stem(nn.Module):
    def __init__(self, config, in_channels, expanded_channels, out_channels):
        super().__init__()
        self.first_conv = MobileNetV2ConvLayer(
            config,
            in_channels=in_channels,
            out_channels=expanded_channels,
            kernel_size=3,
            stride=2,
        )
        if config.first_layer_is_expansion:
            self.expand_1x1 = None
        else:
            self.expand_1x1 = MobileNetV2ConvLayer(
                config, in_channels=expanded_channels, out_channels=expanded_channels, kernel_size=1
            )
        self.conv_3x3 = MobileNetV2ConvLayer(
            config,
            in_channels=expanded_channels,
            out_channels=expanded_channels,
            kernel_size=3,
            stride=1,
            groups=expanded_channels,
        )
        self.reduce_1x1 = MobileNetV2ConvLayer(
            config,
            in_channels=expanded_channels,
            out_channels=out_channels,
            kernel_size=1,
            use_activation=False,
        )

    def forward(self, features):
        features = self.first_conv(features)
        if self.expand_1x1 is not None:
            features = self.expand_1x1(features)
        features = self.conv_3x3(features)
        features = self.reduce_1x1(features)
        return features


class MobileNetV2Model(nn.Module):
    def __init__(self, config, add_pooling_layer: bool = True):
        super().__init__()
        self.config = config
        channels = [16, 24, 24, 32]
        channels = [apply_depth_multiplier(config, x) for x in channels]
        strides = [2, 1, 2]

        self.conv_stem = MobileNetV2Stem(
            config,
            in_channels=config.num_channels,
            expanded_channels=apply_depth_multiplier(config, 32),
            out_channels=channels[0],
        )

        self.layer = nn.ModuleList()
        for i in range(len(strides)):
            self.layer.append(
                MobileNetV2InvertedResidual(
                    config,
                    in_channels=channels[i],
                    out_channels=channels[i + 1],
                    stride=strides[i],
                )
            )

        if config.finegrained_output and config.depth_multiplier < 1.0:
            output_channels = 32
        else:
            output_channels = apply_depth_multiplier(config, 32)

        self.conv_1x1 = MobileNetV2ConvLayer(
            config,
            in_channels=channels[-1],
            out_channels=output_channels,
            kernel_size=1,
        )
        self.pooler = nn.AdaptiveAvgPool2d((1, 1)) if add_pooling_layer else None

    def forward(self, pixel_values=None, output_hidden_states=None):
        if pixel_values is None:
            raise ValueError("You have to specify pixel_values")

        hidden_states = self.conv_stem(pixel_values)

        all_hidden_states = () if output_hidden_states else None

        for i, layer_module in enumerate(self.layer):
            hidden_states = layer_module(hidden_states)
            if output_hidden_states:
                all_hidden_states = all_hidden_states + (hidden_states,)

        last_hidden_state = self.conv_1x1(hidden_states)

        if self.pooler is not None:
            pooled_output = torch.flatten(self.pooler(last_hidden_state), start_dim=1)
        else:
            pooled_output = None

        return tuple(v for v in [last_hidden_state, pooled_output, all_hidden_states] if v is not None)


class MobileNetV2ForImageClassification(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.num_labels = config.num_labels
        self.mobilenet_v2 = MobileNetV2Model(config)
        last_hidden_size = self.mobilenet_v2.conv_1x1.convolution.out_channels
        self.dropout = nn.Dropout(config.classifier_dropout_prob, inplace=True)
        self.classifier = nn.Linear(last_hidden_size, config.num_labels) if config.num_labels > 0 else nn.Identity()

    def forward(self, pixel_values=None, output_hidden_states=None, labels=None):
        outputs = self.mobilenet_v2(pixel_values, output_hidden_states=output_hidden_states)
        pooled_output = outputs[1]
        logits = self.classifier(self.dropout(pooled_output))
        loss = None
        if labels is not None:
            loss = nn.functional.cross_entropy(logits.view(-1, self.num_labels), labels.view(-1))
        return (loss, logits) + outputs[2:] if loss is not None else (logits,) + outputs[2:]


classifier = torch.compile(MobileNetV2ForImageClassification(MobileNetV2Config()).eval(), dynamic=True)


def make():
    torch.manual_seed(0)
    return MobileNetV2ForImageClassification(MobileNetV2Config()).eval(), [
        (torch.randn(2, 1, 16, 16),),
        (torch.randn(2, 1, 15, 17), True, torch.tensor([0, 2])),
    ]
