"""NeMo's GreedyCTCInfer: each utterance is cut to `prediction[:out_len]` with a tensor length, and the labels/timestamps land in a Hypothesis dataclass through `.numpy().tolist()`; pack_hypotheses turns them back into tensors.

Source: NVIDIA/NeMo@00051db5d5c75307bb7641da946651e387093cf3:nemo/collections/asr/parts/submodules/ctc_greedy_decoding.py:28-235 (Hypothesis from nemo/collections/asr/parts/utils/rnnt_utils.py; ConvASRDecoder and EncDecCTCModel.forward from nemo/collections/asr/modules/conv_asr.py and models/ctc_models.py)
Kept: pack_hypotheses/_states_to_device, GreedyCTCInfer's constructor
flags, forward's inference_mode loop choosing the logprobs or labels
decoder, both _greedy_decode_* methods with alignments and timestamps, the
Hypothesis dataclass; a CTC model whose decoder emits log-probs and whose
transcribe step calls the decoding.
Simplified: no @typecheck/NeuralType ports or confidence mixin (frame
confidence stays off); the encoder is one strided conv; vocab 4 + blank.
"""
from dataclasses import dataclass, field
from typing import List, Optional, Union

import torch
from torch import nn


@dataclass
class Hypothesis:
    """Hypothesis class for beam search algorithms."""

    score: float
    y_sequence: Union[List[int], torch.Tensor]
    text: Optional[str] = None
    dec_out: Optional[List[torch.Tensor]] = None
    dec_state: Optional[Union[List[List[torch.Tensor]], List[torch.Tensor]]] = None
    timestep: Union[List[int], torch.Tensor] = field(default_factory=list)
    alignments: Optional[Union[List[int], List[List[int]]]] = None
    frame_confidence: Optional[Union[List[float], List[List[float]]]] = None
    length: Union[int, torch.Tensor] = 0
    y: List[torch.tensor] = None
    lm_state: Optional[Union[dict, List]] = None
    lm_scores: Optional[torch.Tensor] = None
    tokens: Optional[Union[List[int], torch.Tensor]] = None
    last_token: Optional[torch.Tensor] = None


def pack_hypotheses(hypotheses: List[Hypothesis], logitlen: torch.Tensor,) -> List[Hypothesis]:

    if logitlen is not None:
        if hasattr(logitlen, 'cpu'):
            logitlen_cpu = logitlen.to('cpu')
        else:
            logitlen_cpu = logitlen

    for idx, hyp in enumerate(hypotheses):  # type: Hypothesis
        hyp.y_sequence = torch.tensor(hyp.y_sequence, dtype=torch.long)

        if logitlen is not None:
            hyp.length = logitlen_cpu[idx]

        if hyp.dec_state is not None:
            hyp.dec_state = _states_to_device(hyp.dec_state)

    return hypotheses


def _states_to_device(dec_state, device='cpu'):
    if torch.is_tensor(dec_state):
        dec_state = dec_state.to(device)

    elif isinstance(dec_state, (list, tuple)):
        dec_state = tuple(_states_to_device(dec_i, device) for dec_i in dec_state)

    return dec_state


class GreedyCTCInfer:
    """A greedy CTC decoder."""

    def __init__(
        self, blank_id: int, preserve_alignments: bool = False, compute_timestamps: bool = False, preserve_frame_confidence: bool = False,
    ):
        super().__init__()

        self.blank_id = blank_id
        self.preserve_alignments = preserve_alignments
        # we need timestamps to extract non-blank per-frame confidence
        self.compute_timestamps = compute_timestamps | preserve_frame_confidence
        self.preserve_frame_confidence = preserve_frame_confidence

    def forward(
        self, decoder_output: torch.Tensor, decoder_lengths: torch.Tensor,
    ):
        """Returns a list of hypotheses given an input batch of the encoder hidden embedding."""
        with torch.inference_mode():
            hypotheses = []
            # Process each sequence independently
            prediction_cpu_tensor = decoder_output.cpu()

            if prediction_cpu_tensor.ndim < 2 or prediction_cpu_tensor.ndim > 3:
                raise ValueError(
                    f"`decoder_output` must be a tensor of shape [B, T] (labels, int) or "
                    f"[B, T, V] (log probs, float). Provided shape = {prediction_cpu_tensor.shape}"
                )

            # determine type of input - logprobs or labels
            if prediction_cpu_tensor.ndim == 2:  # labels
                greedy_decode = self._greedy_decode_labels
            else:
                greedy_decode = self._greedy_decode_logprobs

            for ind in range(prediction_cpu_tensor.shape[0]):
                out_len = decoder_lengths[ind] if decoder_lengths is not None else None
                hypothesis = greedy_decode(prediction_cpu_tensor[ind], out_len)
                hypotheses.append(hypothesis)

            # Pack results into Hypotheses
            packed_result = pack_hypotheses(hypotheses, decoder_lengths)

        return (packed_result,)

    @torch.no_grad()
    def _greedy_decode_logprobs(self, x: torch.Tensor, out_len: torch.Tensor):
        # x: [T, D]
        # out_len: [seq_len]

        # Initialize blank state and empty label set in Hypothesis
        hypothesis = Hypothesis(score=0.0, y_sequence=[], dec_state=None, timestep=[], last_token=None)
        prediction = x.detach().cpu()

        if out_len is not None:
            prediction = prediction[:out_len]

        prediction_logprobs, prediction_labels = prediction.max(dim=-1)

        non_blank_ids = prediction_labels != self.blank_id
        hypothesis.y_sequence = prediction_labels.numpy().tolist()
        hypothesis.score = (prediction_logprobs[non_blank_ids]).sum()

        if self.preserve_alignments:
            # Preserve the logprobs, as well as labels after argmax
            hypothesis.alignments = (prediction.clone(), prediction_labels.clone())

        if self.compute_timestamps:
            hypothesis.timestep = torch.nonzero(non_blank_ids, as_tuple=False)[:, 0].numpy().tolist()

        return hypothesis

    @torch.no_grad()
    def _greedy_decode_labels(self, x: torch.Tensor, out_len: torch.Tensor):
        # x: [T]
        # out_len: [seq_len]

        # Initialize blank state and empty label set in Hypothesis
        hypothesis = Hypothesis(score=0.0, y_sequence=[], dec_state=None, timestep=[], last_token=None)
        prediction_labels = x.detach().cpu()

        if out_len is not None:
            prediction_labels = prediction_labels[:out_len]

        non_blank_ids = prediction_labels != self.blank_id
        hypothesis.y_sequence = prediction_labels.numpy().tolist()
        hypothesis.score = -1.0

        if self.preserve_alignments:
            raise ValueError("Requested for alignments, but predictions provided were labels, not log probabilities.")

        if self.compute_timestamps:
            hypothesis.timestep = torch.nonzero(non_blank_ids, as_tuple=False)[:, 0].numpy().tolist()

        return hypothesis

    def __call__(self, *args, **kwargs):
        return self.forward(*args, **kwargs)


class ConvASRDecoder(nn.Module):
    """Simple ASR Decoder for use with CTC-based models such as JasperNet and QuartzNet"""

    def __init__(self, feat_in, num_classes, vocabulary=None):
        super().__init__()
        self._feat_in = feat_in
        # Add 1 for blank char
        self._num_classes = num_classes + 1
        self.decoder_layers = nn.Sequential(nn.Conv1d(self._feat_in, self._num_classes, kernel_size=1, bias=True))

    def forward(self, encoder_output):
        return torch.nn.functional.log_softmax(self.decoder_layers(encoder_output).transpose(1, 2), dim=-1)


class EncDecCTCModel(nn.Module):
    def __init__(self, feat_in=4, d_model=6, vocabulary=("a", "b", "c", "d"), compute_timestamps=True, preserve_alignments=True):
        super().__init__()
        self.encoder = nn.Conv1d(feat_in, d_model, kernel_size=3, stride=2, padding=1)
        self.decoder = ConvASRDecoder(d_model, num_classes=len(vocabulary), vocabulary=list(vocabulary))
        self.decoding = GreedyCTCInfer(
            blank_id=len(vocabulary), compute_timestamps=compute_timestamps, preserve_alignments=preserve_alignments
        )

    def forward(self, processed_signal, processed_signal_length):
        encoded = self.encoder(processed_signal)
        encoded_len = (processed_signal_length + 1) // 2
        log_probs = self.decoder(encoder_output=encoded)
        greedy_predictions = log_probs.argmax(dim=-1, keepdim=False)
        return log_probs, encoded_len, greedy_predictions


def transcribe_step(model, processed_signal, processed_signal_length, decode_labels=False):
    log_probs, encoded_len, predictions = model(processed_signal, processed_signal_length)
    decoder_output = predictions if decode_labels else log_probs
    (hypotheses,) = model.decoding(decoder_output=decoder_output, decoder_lengths=encoded_len)
    return [(hyp.y_sequence, hyp.timestep, hyp.length) for hyp in hypotheses]


compiled_transcribe_step = torch.compile(transcribe_step)


def make():
    torch.manual_seed(0)
    model = EncDecCTCModel().eval()
    # label decoding with alignments raises the source's ValueError: that path takes a model without them
    labels_model = EncDecCTCModel(preserve_alignments=False).eval()
    signal = torch.randn(2, 4, 10)
    lengths = torch.tensor([10, 6])
    return transcribe_step, [(model, signal, lengths), (labels_model, signal, lengths, True)]
