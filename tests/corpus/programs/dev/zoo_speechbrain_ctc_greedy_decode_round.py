"""SpeechBrain's ctc_greedy_decode: each utterance is narrowed to `int(torch.round(seq_len * batch_max_len))` frames and its argmax path goes through `predictions.tolist()` into filter_ctc_output (itertools.groupby plus a filter lambda).

Source: speechbrain/speechbrain@012d051f3737e1ab1e469b26c5ce7e434e5fe63f:speechbrain/decoders/ctc.py:319-398 (EncoderASR.encode_batch/transcribe_batch from speechbrain/pretrained/interfaces.py:733-862, CTCTextEncoder.decode_ndim from speechbrain/dataio/encoder.py:543-567, same commit)
Kept: the negative blank_id convention, the per-utterance relative-length
narrow, groupby repetition filtering and blank removal; an EncoderASR whose
decoding_function is a functools.partial of ctc_greedy_decode, whose
transcribe_batch decodes ids to text with the CTC text encoder.
Simplified: the encoder is a linear projection with log_softmax; the
tokenizer maps 4 ids to characters (index 0 is the blank).
"""
import functools
from itertools import groupby

import torch
from torch import nn


def filter_ctc_output(string_pred, blank_id=-1):
    """Apply CTC output merge and filter rules."""

    if isinstance(string_pred, list):
        # Filter the repetitions
        string_out = [i[0] for i in groupby(string_pred)]

        # Filter the blank symbol
        string_out = list(filter(lambda elem: elem != blank_id, string_out))
    else:
        raise ValueError("filter_ctc_out can only filter python lists")
    return string_out


def ctc_greedy_decode(probabilities, seq_lens, blank_id=-1):
    """Greedy decode a batch of probabilities and apply CTC rules."""
    if isinstance(blank_id, int) and blank_id < 0:
        blank_id = probabilities.shape[-1] + blank_id
    batch_max_len = probabilities.shape[1]
    batch_outputs = []
    for seq, seq_len in zip(probabilities, seq_lens):
        actual_size = int(torch.round(seq_len * batch_max_len))
        scores, predictions = torch.max(seq.narrow(0, 0, actual_size), dim=1)
        out = filter_ctc_output(predictions.tolist(), blank_id=blank_id)
        batch_outputs.append(out)
    return batch_outputs


class CTCTextEncoder:
    def __init__(self, labels, blank_label="<blank>"):
        self.ind2lab = dict(enumerate([blank_label] + list(labels)))

    def decode_ndim(self, x):
        """Decodes an arbitrarily nested iterable to a list of labels."""
        try:
            decoded = []
            for subtensor in x:
                decoded.append(self.decode_ndim(subtensor))
            return decoded
        except TypeError:  # Not an iterable, bottom level!
            return self.ind2lab[int(x)]


class EncoderASR(nn.Module):
    """Encoder-only ASR: CTC log-probabilities decoded greedily."""

    def __init__(self, n_feats=5, labels="abc"):
        super().__init__()
        self.tokenizer = CTCTextEncoder(labels)
        self.encoder = nn.Sequential(nn.Linear(n_feats, len(labels) + 1), nn.LogSoftmax(dim=-1))
        self.decoding_function = functools.partial(ctc_greedy_decode, blank_id=0)

    def encode_batch(self, wavs, wav_lens):
        wavs = wavs.float()
        encoder_out = self.encoder(wavs)
        return encoder_out

    def transcribe_batch(self, wavs, wav_lens):
        with torch.no_grad():
            encoder_out = self.encode_batch(wavs, wav_lens)
            predictions = self.decoding_function(encoder_out, wav_lens)
            predicted_words = [
                "".join(self.tokenizer.decode_ndim(token_seq))
                for token_seq in predictions
            ]
        return predicted_words, predictions


asr_model = EncoderASR()
transcribe = torch.compile(asr_model.transcribe_batch)


def make():
    torch.manual_seed(0)
    feats = torch.randn(2, 7, 5)
    return EncoderASR().transcribe_batch, [(feats, torch.tensor([1.0, 0.6])), (feats[:1], torch.tensor([0.3]))]
