"""pyannote.audio's PyanNet segmentation model: SincNet features go through `nn.LSTM` layers (one per layer when `monolithic` is off), with every choice read from `self.hparams` dicts.

Source: pyannote/pyannote-audio@035201d1b5f99b7928325bf253dce4d699601c22:pyannote/audio/models/segmentation/PyanNet.py:40-200 (SincNet from pyannote/audio/models/blocks/sincnet.py, Model.default_activation from pyannote/audio/core/model.py, merge_dict, pairwise)
Kept: the class-level defaults merged with merge_dict, save_hyperparameters
into hparams, monolithic vs split LSTMs with inter-layer dropout, the
pairwise linear stack, build() choosing the classifier size for powerset
or multi-label problems, and forward's hparams-driven branches.
Simplified: Lightning's hparams are an attribute dict; SincNet's learnable
sinc filterbank is a plain Conv1d; einops rearrange is transpose; 1 s of
audio at 400 Hz, LSTM hidden size 8.
"""
from enum import Enum
from itertools import combinations, tee

import torch
import torch.nn as nn
import torch.nn.functional as F


class Problem(Enum):
    BINARY_CLASSIFICATION = 0
    MONO_LABEL_CLASSIFICATION = 1
    MULTI_LABEL_CLASSIFICATION = 2
    POWERSET = 3


class Specifications:
    def __init__(self, problem, classes, max_simult_speakers=None):
        self.problem = problem
        self.classes = classes
        self.max_simult_speakers = max_simult_speakers


class AttrDict(dict):
    __getattr__ = dict.__getitem__


def merge_dict(defaults, custom=None):
    params = dict(defaults)
    if custom is not None:
        params.update(custom)
    return params


def pairwise(iterable):
    a, b = tee(iterable)
    next(b, None)
    return zip(a, b)


def get_monolabel_class_count(num_classes, max_simult_speakers):
    return sum(len(list(combinations(range(num_classes), k))) for k in range(max_simult_speakers + 1))


class SincNet(nn.Module):
    def __init__(self, sample_rate: int = 16000, stride: int = 1):
        super().__init__()
        self.stride = stride
        self.wav_norm1d = nn.InstanceNorm1d(1, affine=True)

        self.conv1d = nn.ModuleList()
        self.pool1d = nn.ModuleList()
        self.norm1d = nn.ModuleList()

        self.conv1d.append(nn.Conv1d(1, 80, 25, stride=self.stride))
        self.pool1d.append(nn.MaxPool1d(3, stride=3, padding=0, dilation=1))
        self.norm1d.append(nn.InstanceNorm1d(80, affine=True))

        self.conv1d.append(nn.Conv1d(80, 60, 5, stride=1))
        self.pool1d.append(nn.MaxPool1d(3, stride=3, padding=0, dilation=1))
        self.norm1d.append(nn.InstanceNorm1d(60, affine=True))

    def forward(self, waveforms: torch.Tensor) -> torch.Tensor:
        outputs = self.wav_norm1d(waveforms)

        for c, (conv1d, pool1d, norm1d) in enumerate(
            zip(self.conv1d, self.pool1d, self.norm1d)
        ):
            outputs = conv1d(outputs)

            # https://github.com/mravanelli/SincNet/issues/4
            if c == 0:
                outputs = torch.abs(outputs)

            outputs = F.leaky_relu(norm1d(pool1d(outputs)))

        return outputs


class Model(nn.Module):
    def __init__(self, sample_rate: int = 16000, num_channels: int = 1, specifications=None):
        super().__init__()
        self.sample_rate = sample_rate
        self.num_channels = num_channels
        self.specifications = specifications
        self.hparams = AttrDict()

    def save_hyperparameters(self, *names, frame):
        for name in names:
            self.hparams[name] = frame[name]

    def default_activation(self) -> nn.Module:
        if self.specifications.problem == Problem.BINARY_CLASSIFICATION:
            return nn.Sigmoid()
        elif self.specifications.problem == Problem.MONO_LABEL_CLASSIFICATION:
            return nn.LogSoftmax(dim=-1)
        elif self.specifications.problem == Problem.MULTI_LABEL_CLASSIFICATION:
            return nn.Sigmoid()
        elif self.specifications.problem == Problem.POWERSET:
            return nn.LogSoftmax(dim=-1)
        else:
            raise RuntimeError(
                f"{self.specifications.problem} problem type hints at an unsupported activation."
            )


class PyanNet(Model):
    """PyanNet segmentation model

    SincNet > LSTM > Feed forward > Classifier
    """

    SINCNET_DEFAULTS = {"stride": 10}
    LSTM_DEFAULTS = {
        "hidden_size": 128,
        "num_layers": 2,
        "bidirectional": True,
        "monolithic": True,
        "dropout": 0.0,
    }
    LINEAR_DEFAULTS = {"hidden_size": 128, "num_layers": 2}

    def __init__(
        self,
        sincnet: dict = None,
        lstm: dict = None,
        linear: dict = None,
        sample_rate: int = 16000,
        num_channels: int = 1,
        specifications=None,
    ):

        super().__init__(sample_rate=sample_rate, num_channels=num_channels, specifications=specifications)

        sincnet = merge_dict(self.SINCNET_DEFAULTS, sincnet)
        sincnet["sample_rate"] = sample_rate
        lstm = merge_dict(self.LSTM_DEFAULTS, lstm)
        lstm["batch_first"] = True
        linear = merge_dict(self.LINEAR_DEFAULTS, linear)
        self.save_hyperparameters("sincnet", "lstm", "linear", frame=locals())

        self.sincnet = SincNet(**self.hparams.sincnet)

        monolithic = lstm["monolithic"]
        if monolithic:
            multi_layer_lstm = dict(lstm)
            del multi_layer_lstm["monolithic"]
            self.lstm = nn.LSTM(60, **multi_layer_lstm)

        else:
            num_layers = lstm["num_layers"]
            if num_layers > 1:
                self.dropout = nn.Dropout(p=lstm["dropout"])

            one_layer_lstm = dict(lstm)
            one_layer_lstm["num_layers"] = 1
            one_layer_lstm["dropout"] = 0.0
            del one_layer_lstm["monolithic"]

            self.lstm = nn.ModuleList(
                [
                    nn.LSTM(
                        60
                        if i == 0
                        else lstm["hidden_size"] * (2 if lstm["bidirectional"] else 1),
                        **one_layer_lstm
                    )
                    for i in range(num_layers)
                ]
            )

        if linear["num_layers"] < 1:
            return

        lstm_out_features: int = self.hparams.lstm["hidden_size"] * (
            2 if self.hparams.lstm["bidirectional"] else 1
        )
        self.linear = nn.ModuleList(
            [
                nn.Linear(in_features, out_features)
                for in_features, out_features in pairwise(
                    [
                        lstm_out_features,
                    ]
                    + [self.hparams.linear["hidden_size"]]
                    * self.hparams.linear["num_layers"]
                )
            ]
        )

    def build(self):

        if self.hparams.linear["num_layers"] > 0:
            in_features = self.hparams.linear["hidden_size"]
        else:
            in_features = self.hparams.lstm["hidden_size"] * (
                2 if self.hparams.lstm["bidirectional"] else 1
            )

        if self.specifications.problem == Problem.POWERSET:
            out_features = get_monolabel_class_count(
                len(self.specifications.classes),
                self.specifications.max_simult_speakers,
            )
        else:
            out_features = len(self.specifications.classes)

        self.classifier = nn.Linear(in_features, out_features)
        self.activation = self.default_activation()

    def forward(self, waveforms: torch.Tensor) -> torch.Tensor:
        """(batch, channel, sample) -> (batch, frame, classes)"""

        outputs = self.sincnet(waveforms)

        if self.hparams.lstm["monolithic"]:
            outputs, _ = self.lstm(outputs.transpose(1, 2))
        else:
            outputs = outputs.transpose(1, 2)
            for i, lstm in enumerate(self.lstm):
                outputs, _ = lstm(outputs)
                if i + 1 < self.hparams.lstm["num_layers"]:
                    outputs = self.dropout(outputs)

        if self.hparams.linear["num_layers"] > 0:
            for linear in self.linear:
                outputs = F.leaky_relu(linear(outputs))

        return self.activation(self.classifier(outputs))


def segmentation_model():
    specifications = Specifications(Problem.POWERSET, classes=["spk1", "spk2", "spk3"], max_simult_speakers=2)
    model = PyanNet(
        sincnet={"stride": 2},
        lstm={"hidden_size": 8, "num_layers": 2, "monolithic": False, "dropout": 0.1},
        linear={"hidden_size": 8, "num_layers": 1},
        sample_rate=400,
        specifications=specifications,
    )
    model.build()
    return model.eval()


model = torch.compile(segmentation_model())


def make():
    torch.manual_seed(0)
    return segmentation_model(), [(torch.randn(2, 1, 400),), (torch.randn(1, 1, 400),)]
