"""docTR CRNN text recognizer: features go through a 2-layer bidirectional nn.LSTM, and CTC best-path decoding (`seq.tolist()`, itertools.groupby, `probs.tolist()`) runs in a nested function marked `@torch.compiler.disable`.

Source: mindee/doctr@0118508f64d53281fb7bb7f3b95d16b44dbdecc4:doctr/models/recognition/crnn/pytorch.py:46-240
Also: doctr/datasets/utils.py decode_sequence (join of vocab characters),
doctr/models/recognition/core.py RecognitionPostProcessor (stores vocab).
Kept: CTCPostProcessor.ctc_best_path and __call__ verbatim, CRNN.__init__'s
LSTM sizing from a dry run of the feature extractor under torch.inference_mode,
CRNN.forward verbatim (training guard, exportable early return, the
return_model_output / return_preds / target plumbing, the disabled _postprocess).
Simplified: the VGG16-BN backbone is two conv blocks; no CTC loss (target stays
None); vocab is 6 characters.
"""
from itertools import groupby
from typing import Any

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

VOCAB = "abcdef"


def decode_sequence(input_seq, mapping: str) -> str:
    if not isinstance(input_seq, (list, np.ndarray)):
        raise TypeError("Invalid sequence type")
    if isinstance(input_seq, np.ndarray) and (input_seq.dtype != np.int_ or input_seq.max() >= len(mapping)):
        raise AssertionError("Input must be an array of int, with max less than mapping size")

    return "".join(map(mapping.__getitem__, input_seq))


class RecognitionPostProcessor:
    def __init__(self, vocab: str) -> None:
        self.vocab = vocab
        self._embedding = list(self.vocab) + ["<eos>"]


class CTCPostProcessor(RecognitionPostProcessor):
    @staticmethod
    def ctc_best_path(
        logits: torch.Tensor,
        vocab: str = VOCAB,
        blank: int = 0,
    ) -> list[tuple[str, float]]:
        # Gather the most confident characters, and assign the smallest conf among those to the sequence prob
        probs = F.softmax(logits, dim=-1).max(dim=-1).values.min(dim=1).values

        # collapse best path (using itertools.groupby), map to chars, join char list to string
        words = [
            decode_sequence([k for k, _ in groupby(seq.tolist()) if k != blank], vocab)
            for seq in torch.argmax(logits, dim=-1)
        ]

        return list(zip(words, probs.tolist()))

    def __call__(self, logits: torch.Tensor) -> list[tuple[str, float]]:
        # Decode CTC
        return self.ctc_best_path(logits=logits, vocab=self.vocab, blank=len(self.vocab))


def vgg_features() -> nn.Sequential:
    return nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(inplace=True), nn.MaxPool2d(2),
        nn.Conv2d(8, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(inplace=True), nn.MaxPool2d((2, 1)),
    )


class CRNN(nn.Module):
    def __init__(
        self,
        feature_extractor: nn.Module,
        vocab: str,
        rnn_units: int = 128,
        input_shape: tuple[int, int, int] = (3, 32, 128),
        exportable: bool = False,
        cfg: dict[str, Any] | None = None,
    ) -> None:
        super().__init__()
        self.vocab = vocab
        self.cfg = cfg
        self.max_length = 32
        self.exportable = exportable
        self.feat_extractor = feature_extractor

        # Resolve the input_size of the LSTM
        with torch.inference_mode():
            out_shape = self.feat_extractor(torch.zeros((1, *input_shape))).shape
        lstm_in = out_shape[1] * out_shape[2]

        self.decoder = nn.LSTM(
            input_size=lstm_in,
            hidden_size=rnn_units,
            batch_first=True,
            num_layers=2,
            bidirectional=True,
        )

        # features units = 2 * rnn_units because bidirectional layers
        self.linear = nn.Linear(in_features=2 * rnn_units, out_features=len(vocab) + 1)

        self.postprocessor = CTCPostProcessor(vocab=vocab)

        for n, m in self.named_modules():
            # Don't override the initialization of the backbone
            if n.startswith("feat_extractor."):
                continue
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight.data, mode="fan_out", nonlinearity="relu")
                if m.bias is not None:
                    m.bias.data.zero_()
            elif isinstance(m, nn.BatchNorm2d):
                m.weight.data.fill_(1.0)
                m.bias.data.zero_()

    def forward(
        self,
        x: torch.Tensor,
        target: list[str] | None = None,
        return_model_output: bool = False,
        return_preds: bool = False,
    ) -> dict[str, Any]:
        if self.training and target is None:
            raise ValueError("Need to provide labels during training")

        features = self.feat_extractor(x)
        # B x C x H x W --> B x C*H x W --> B x W x C*H
        c, h, w = features.shape[1], features.shape[2], features.shape[3]
        features_seq = torch.reshape(features, shape=(-1, h * c, w))
        features_seq = torch.transpose(features_seq, 1, 2)
        logits, _ = self.decoder(features_seq)
        logits = self.linear(logits)

        out: dict[str, Any] = {}
        if self.exportable:
            out["logits"] = logits
            return out

        if return_model_output:
            out["out_map"] = logits

        if target is None or return_preds:
            # Disable for torch.compile compatibility
            @torch.compiler.disable  # type: ignore[attr-defined]
            def _postprocess(logits: torch.Tensor) -> list[tuple[str, float]]:
                return self.postprocessor(logits)

            # Post-process boxes
            out["preds"] = _postprocess(logits)

        return out


def crnn_vgg16_bn(**kwargs: Any) -> CRNN:
    kwargs["vocab"] = kwargs.get("vocab", VOCAB)
    kwargs["input_shape"] = kwargs.get("input_shape", (3, 8, 16))
    return CRNN(vgg_features(), rnn_units=8, **kwargs)


predictor = torch.compile(crnn_vgg16_bn().eval())


def make():
    torch.manual_seed(0)
    model = crnn_vgg16_bn().eval()
    x = torch.rand(2, 3, 8, 16)
    return model, [(x,), (x, None, True), (x[:1],)]
