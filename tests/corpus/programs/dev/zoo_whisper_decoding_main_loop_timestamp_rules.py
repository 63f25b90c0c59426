"""OpenAI Whisper decoding loop: ApplyTimestampRules walks `sampled_tokens.tolist()`, indexes timestamps with a boolean mask and compares `timestamp_logprob > max_text_token_logprob` per row; GreedyDecoder's `(tokens[:, -1] == self.eot).all()` ends the loop.

Source: openai/whisper@c0d2f624c09dc18e709e37c2ad90c039a4eb72a2:whisper/decoding.py:130-178,216-300,407-506,680-710
Kept: DecodingTask._main_loop as written (no-speech probabilities at the
first step, the logit-filter loop, the completed/n_ctx stop, cleanup in
`finally`), GreedyDecoder.update/finalize, SuppressBlank, SuppressTokens and
ApplyTimestampRules.apply, the Inference interface.
Simplified: the tokenizer is a stand-in holding Whisper's special-token
layout (text ids < 8, eot 8, sot 9, no_speech 10, no_timestamps 11,
timestamps from 12); PyTorchInference runs a small decoder without a kv
cache; the task is built directly instead of from DecodingOptions; vocab 20.
"""
from typing import List, Optional, Sequence, Tuple

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.distributions import Categorical


class Tokenizer:
    """The special-token layout of whisper.tokenizer.Tokenizer, on a 20-token vocabulary."""

    eot = 8
    sot = 9
    no_speech = 10
    no_timestamps = 11
    timestamp_begin = 12

    def encode(self, text: str) -> List[int]:
        return [0] if text == " " else [1 + (ord(c) % 7) for c in text]

    @property
    def sot_sequence(self) -> Tuple[int, ...]:
        return (self.sot,)


class Inference:
    def logits(self, tokens: Tensor, audio_features: Tensor) -> Tensor:
        """Perform a forward pass on the decoder and return per-token logits"""
        raise NotImplementedError

    def cleanup_caching(self) -> None:
        """Clean up any resources or hooks after decoding is finished"""
        pass


class TextDecoder(nn.Module):
    def __init__(self, n_vocab=20, n_state=8):
        super().__init__()
        self.token_embedding = nn.Embedding(n_vocab, n_state)
        self.cross = nn.Linear(n_state, n_state)

    def forward(self, x: Tensor, xa: Tensor) -> Tensor:
        h = self.token_embedding(x) + self.cross(xa.mean(1, keepdim=True))
        return (h @ self.token_embedding.weight.t()).float()


class PyTorchInference(Inference):
    def __init__(self, decoder: TextDecoder, initial_token_length: int):
        self.decoder = decoder
        self.initial_token_length = initial_token_length

    def logits(self, tokens: Tensor, audio_features: Tensor) -> Tensor:
        return self.decoder(tokens, audio_features)

    def cleanup_caching(self):
        pass


class TokenDecoder:
    def reset(self):
        """Initialize any stateful variables for decoding a new sequence"""

    def update(self, tokens: Tensor, logits: Tensor, sum_logprobs: Tensor) -> Tuple[Tensor, bool]:
        raise NotImplementedError


class GreedyDecoder(TokenDecoder):
    def __init__(self, temperature: float, eot: int):
        self.temperature = temperature
        self.eot = eot

    def update(self, tokens: Tensor, logits: Tensor, sum_logprobs: Tensor) -> Tuple[Tensor, bool]:
        if self.temperature == 0:
            next_tokens = logits.argmax(dim=-1)
        else:
            next_tokens = Categorical(logits=logits / self.temperature).sample()

        logprobs = F.log_softmax(logits.float(), dim=-1)
        current_logprobs = logprobs[torch.arange(logprobs.shape[0]), next_tokens]
        sum_logprobs += current_logprobs * (tokens[:, -1] != self.eot)

        next_tokens[tokens[:, -1] == self.eot] = self.eot
        tokens = torch.cat([tokens, next_tokens[:, None]], dim=-1)

        completed = (tokens[:, -1] == self.eot).all()
        return tokens, completed

    def finalize(self, tokens: Tensor, sum_logprobs: Tensor):
        # make sure each sequence has at least one EOT token at the end
        tokens = F.pad(tokens, (0, 1), value=self.eot)
        return tokens, sum_logprobs.tolist()


class LogitFilter:
    def apply(self, logits: Tensor, tokens: Tensor) -> None:
        """Apply any filtering or masking to logits in-place"""
        raise NotImplementedError


class SuppressBlank(LogitFilter):
    def __init__(self, tokenizer: Tokenizer, sample_begin: int):
        self.tokenizer = tokenizer
        self.sample_begin = sample_begin

    def apply(self, logits: Tensor, tokens: Tensor):
        if tokens.shape[1] == self.sample_begin:
            logits[:, self.tokenizer.encode(" ") + [self.tokenizer.eot]] = -np.inf


class SuppressTokens(LogitFilter):
    def __init__(self, suppress_tokens: Sequence[int]):
        self.suppress_tokens = list(suppress_tokens)

    def apply(self, logits: Tensor, tokens: Tensor):
        logits[:, self.suppress_tokens] = -np.inf


class ApplyTimestampRules(LogitFilter):
    def __init__(self, tokenizer: Tokenizer, sample_begin: int, max_initial_timestamp_index: Optional[int]):
        self.tokenizer = tokenizer
        self.sample_begin = sample_begin
        self.max_initial_timestamp_index = max_initial_timestamp_index

    def apply(self, logits: Tensor, tokens: Tensor):
        # suppress <|notimestamps|> which is handled by without_timestamps
        if self.tokenizer.no_timestamps is not None:
            logits[:, self.tokenizer.no_timestamps] = -np.inf

        # timestamps have to appear in pairs, except directly before EOT; mask logits accordingly
        for k in range(tokens.shape[0]):
            sampled_tokens = tokens[k, self.sample_begin :]
            seq = [t for t in sampled_tokens.tolist()]
            last_was_timestamp = (
                len(seq) >= 1 and seq[-1] >= self.tokenizer.timestamp_begin
            )
            penultimate_was_timestamp = (
                len(seq) < 2 or seq[-2] >= self.tokenizer.timestamp_begin
            )

            if last_was_timestamp:
                if penultimate_was_timestamp:  # has to be non-timestamp
                    logits[k, self.tokenizer.timestamp_begin :] = -np.inf
                else:  # cannot be normal text tokens
                    logits[k, : self.tokenizer.eot] = -np.inf

            timestamps = sampled_tokens[
                sampled_tokens.ge(self.tokenizer.timestamp_begin)
            ]
            if timestamps.numel() > 0:
                # timestamps shouldn't decrease; forbid timestamp tokens smaller than the last
                # also force each segment to have a nonzero length, to prevent infinite looping
                if last_was_timestamp and not penultimate_was_timestamp:
                    timestamp_last = timestamps[-1]
                else:
                    timestamp_last = timestamps[-1] + 1
                logits[k, self.tokenizer.timestamp_begin : timestamp_last] = -np.inf

        if tokens.shape[1] == self.sample_begin:
            # suppress generating non-timestamp tokens at the beginning
            logits[:, : self.tokenizer.timestamp_begin] = -np.inf

            # apply the `max_initial_timestamp` option
            if self.max_initial_timestamp_index is not None:
                last_allowed = (
                    self.tokenizer.timestamp_begin + self.max_initial_timestamp_index
                )
                logits[:, last_allowed + 1 :] = -np.inf

        # if sum of probability over timestamps is above any other token, sample timestamp
        logprobs = F.log_softmax(logits.float(), dim=-1)
        for k in range(tokens.shape[0]):
            timestamp_logprob = logprobs[k, self.tokenizer.timestamp_begin :].logsumexp(
                dim=-1
            )
            max_text_token_logprob = logprobs[k, : self.tokenizer.timestamp_begin].max()
            if timestamp_logprob > max_text_token_logprob:
                logits[k, : self.tokenizer.timestamp_begin] = -np.inf


class DecodingTask:
    def __init__(self, decoder_model: TextDecoder, sample_len: int = 6, without_timestamps: bool = False,
                 suppress_blank: bool = True, max_initial_timestamp_index: Optional[int] = 2, n_ctx: int = 12):
        self.tokenizer = Tokenizer()
        self.n_ctx = n_ctx
        self.sample_len = sample_len
        self.sot_sequence: Tuple[int] = self.tokenizer.sot_sequence
        self.initial_tokens: Tuple[int] = self.sot_sequence
        self.sample_begin: int = len(self.initial_tokens)
        self.sot_index: int = self.initial_tokens.index(self.tokenizer.sot)

        # inference: implements the forward pass through the decoder, including kv caching
        self.inference = PyTorchInference(decoder_model, len(self.initial_tokens))

        # decoder: implements how to select the next tokens, given the autoregressive distribution
        self.decoder = GreedyDecoder(0.0, self.tokenizer.eot)

        # logit filters: applies various rules to suppress or penalize certain tokens
        self.logit_filters = []
        if suppress_blank:
            self.logit_filters.append(SuppressBlank(self.tokenizer, self.sample_begin))
        self.logit_filters.append(SuppressTokens([self.tokenizer.sot, self.tokenizer.no_speech]))
        if not without_timestamps:
            self.logit_filters.append(
                ApplyTimestampRules(self.tokenizer, self.sample_begin, max_initial_timestamp_index)
            )

    def _main_loop(self, audio_features: Tensor, tokens: Tensor):
        n_batch = tokens.shape[0]
        sum_logprobs: Tensor = torch.zeros(n_batch, device=audio_features.device)
        no_speech_probs = [np.nan] * n_batch

        try:
            for i in range(self.sample_len):
                logits = self.inference.logits(tokens, audio_features)

                if (
                    i == 0 and self.tokenizer.no_speech is not None
                ):  # save no_speech_probs
                    probs_at_sot = logits[:, self.sot_index].float().softmax(dim=-1)
                    no_speech_probs = probs_at_sot[:, self.tokenizer.no_speech].tolist()

                # now we need to consider the logits at the last token only
                logits = logits[:, -1]

                # apply the logit filters, e.g. for suppressing or applying penalty to
                for logit_filter in self.logit_filters:
                    logit_filter.apply(logits, tokens)

                # expand the tokens tensor with the selected next tokens
                tokens, completed = self.decoder.update(tokens, logits, sum_logprobs)

                if completed or tokens.shape[-1] > self.n_ctx:
                    break
        finally:
            self.inference.cleanup_caching()

        return tokens, sum_logprobs, no_speech_probs


def decode_fast(decoder_model: TextDecoder):
    task = DecodingTask(decoder_model)
    task._main_loop = torch.compile(task._main_loop)
    return task


def make():
    torch.manual_seed(0)
    task = DecodingTask(TextDecoder(), sample_len=6)
    no_timestamps = DecodingTask(TextDecoder(), sample_len=4, without_timestamps=True, suppress_blank=False)
    audio_features = torch.randn(2, 5, 8)
    tokens = torch.tensor([[Tokenizer.sot], [Tokenizer.sot]])
    resumed = torch.tensor([[Tokenizer.sot, 13, 3, 4, 14], [Tokenizer.sot, 12, 5, 13, 13]])
    return DecodingTask._main_loop, [
        (task, audio_features, tokens),
        (task, audio_features, resumed),
        (no_timestamps, audio_features[:1], tokens[:1]),
    ]
