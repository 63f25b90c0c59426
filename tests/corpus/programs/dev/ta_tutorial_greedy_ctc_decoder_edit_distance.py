"""torchaudio ASR tutorial GreedyCTCDecoder (argmax, unique_consecutive, Python filter over tensor elements, label lookup) plus functional.edit_distance for the error rate, in a compiled transcribe step.

Source: pytorch/audio@04eeaaa2fa:examples/tutorials/speech_recognition_pipeline_tutorial.py:class GreedyCTCDecoder; pytorch/audio@v2.11.0:src/torchaudio/functional/functional.py:1494-1532
Kept: GreedyCTCDecoder verbatim (the list comprehension `i != self.blank` over
the tensor's elements and `self.labels[i]` indexing with 0-d tensors) and
edit_distance verbatim, compared on the decoded characters.
Simplified: the wav2vec2 bundle model is a frame-wise Linear over log-mel-like
features; the labels are a 6-symbol alphabet; the tutorial's decode and WER
calls are wrapped in one compiled function.
"""
from typing import Sequence

import torch


class GreedyCTCDecoder(torch.nn.Module):
    def __init__(self, labels, blank=0):
        super().__init__()
        self.labels = labels
        self.blank = blank

    def forward(self, emission: torch.Tensor) -> str:
        """Given a sequence emission over labels, get the best path string
        Args:
          emission (Tensor): Logit tensors. Shape `[num_seq, num_label]`.

        Returns:
          str: The resulting transcript
        """
        indices = torch.argmax(emission, dim=-1)  # [num_seq,]
        indices = torch.unique_consecutive(indices, dim=-1)
        indices = [i for i in indices if i != self.blank]
        return "".join([self.labels[i] for i in indices])


def edit_distance(seq1: Sequence, seq2: Sequence) -> int:
    len_sent2 = len(seq2)
    dold = list(range(len_sent2 + 1))
    dnew = [0 for _ in range(len_sent2 + 1)]

    for i in range(1, len(seq1) + 1):
        dnew[0] = i
        for j in range(1, len_sent2 + 1):
            if seq1[i - 1] == seq2[j - 1]:
                dnew[j] = dold[j - 1]
            else:
                substitution = dold[j - 1] + 1
                insertion = dnew[j - 1] + 1
                deletion = dold[j] + 1
                dnew[j] = min(substitution, insertion, deletion)

        dnew, dold = dold, dnew

    return int(dold[-1])


LABELS = ("-", "|", "A", "B", "C", "D")


class TinyAcousticModel(torch.nn.Module):
    def __init__(self, n_feats=4, n_labels=len(LABELS)):
        super().__init__()
        self.proj = torch.nn.Linear(n_feats, n_labels)

    def forward(self, features):
        return self.proj(features), None


model = TinyAcousticModel()
decoder = GreedyCTCDecoder(labels=LABELS)


def transcribe(model, decoder, features, reference):
    emission, _ = model(features)
    transcript = decoder(emission[0])
    errors = edit_distance(transcript, reference)
    return transcript, errors / len(reference)


compiled_transcribe = torch.compile(transcribe)


def make():
    torch.manual_seed(0)
    m = TinyAcousticModel()
    d = GreedyCTCDecoder(labels=LABELS)
    feats = torch.randn(1, 12, 4)
    return (lambda f, r: transcribe(m, d, f, r)), [(feats, "AB|C"), (feats * 3, "DA")]
