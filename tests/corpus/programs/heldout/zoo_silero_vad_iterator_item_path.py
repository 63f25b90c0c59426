"""silero-vad streaming: `VADIterator.__call__` turns the model's output into a float with `.item()` and walks the trigger / temp_end state machine on `speech_prob >= self.threshold`; a stream helper feeds 512-sample chunks and collects the events.

Source: snakers4/silero-vad@0a7d1f6c2cec02b29d0576afd69b74d7f7478e38:src/silero_vad/utils_vad.py:438-516
Also: OnnxWrapper._validate_input/reset_states/__call__ (lines 11-91) for the model's
context handling, which the JIT model shares.
Kept: VADIterator.__init__/reset_states/__call__ verbatim (torch.is_tensor guard,
window_size_samples from len(x), the speech start/end dicts with return_seconds).
Simplified: the JIT/ONNX network is a torch module with the same
reset_states/__call__(x, sr) interface (64-sample context, Linear + sigmoid);
the stream loop is the README example.
"""
import torch
from torch import nn


class SileroVAD(nn.Module):
    def __init__(self):
        super().__init__()
        self.sample_rates = [8000, 16000]
        self.proj = nn.Linear(64 + 512, 1)
        self.reset_states()

    def _validate_input(self, x, sr: int):
        if x.dim() == 1:
            x = x.unsqueeze(0)
        if x.dim() > 2:
            raise ValueError(f"Too many dimensions for input audio chunk {x.dim()}")

        if sr != 16000 and (sr % 16000 == 0):
            step = sr // 16000
            x = x[:,::step]
            sr = 16000

        if sr not in self.sample_rates:
            raise ValueError(f"Supported sampling rates: {self.sample_rates} (or multiply of 16000)")
        if sr / x.shape[1] > 31.25:
            raise ValueError("Input audio chunk is too short")

        return x, sr

    def reset_states(self, batch_size=1):
        self._context = torch.zeros(0)
        self._last_sr = 0
        self._last_batch_size = 0

    def forward(self, x, sr: int):
        x, sr = self._validate_input(x, sr)
        batch_size = x.shape[0]
        context_size = 64 if sr == 16000 else 32
        if not self._last_batch_size:
            self.reset_states(batch_size)
        if not len(self._context):
            self._context = torch.zeros(batch_size, context_size)
        x = torch.cat([self._context, x], dim=1)
        out = torch.sigmoid(self.proj(x * 20.0))
        self._context = x[..., -context_size:]
        self._last_sr = sr
        self._last_batch_size = batch_size
        return out


class VADIterator:
    def __init__(self,
                 model,
                 threshold: float = 0.5,
                 sampling_rate: int = 16000,
                 min_silence_duration_ms: int = 100,
                 speech_pad_ms: int = 30
                 ):
        self.model = model
        self.threshold = threshold
        self.sampling_rate = sampling_rate

        if sampling_rate not in [8000, 16000]:
            raise ValueError('VADIterator does not support sampling rates other than [8000, 16000]')

        self.min_silence_samples = sampling_rate * min_silence_duration_ms / 1000
        self.speech_pad_samples = sampling_rate * speech_pad_ms / 1000
        self.reset_states()

    def reset_states(self):

        self.model.reset_states()
        self.triggered = False
        self.temp_end = 0
        self.current_sample = 0

    @torch.no_grad()
    def __call__(self, x, return_seconds=False, time_resolution: int = 1):
        if not torch.is_tensor(x):
            try:
                x = torch.Tensor(x)
            except:
                raise TypeError("Audio cannot be casted to tensor. Cast it manually")

        window_size_samples = len(x[0]) if x.dim() == 2 else len(x)
        self.current_sample += window_size_samples

        speech_prob = self.model(x, self.sampling_rate).item()

        if (speech_prob >= self.threshold) and self.temp_end:
            self.temp_end = 0

        if (speech_prob >= self.threshold) and not self.triggered:
            self.triggered = True
            speech_start = max(0, self.current_sample - self.speech_pad_samples - window_size_samples)
            return {'start': int(speech_start) if not return_seconds else round(speech_start / self.sampling_rate, time_resolution)}

        if (speech_prob < self.threshold - 0.15) and self.triggered:
            if not self.temp_end:
                self.temp_end = self.current_sample
            if self.current_sample - self.temp_end < self.min_silence_samples:
                return None
            else:
                speech_end = self.temp_end + self.speech_pad_samples - window_size_samples
                self.temp_end = 0
                self.triggered = False
                return {'end': int(speech_end) if not return_seconds else round(speech_end / self.sampling_rate, time_resolution)}

        return None


def stream(model, wav, return_seconds=False, min_silence_duration_ms=100):
    vad_iterator = VADIterator(model, sampling_rate=16000, min_silence_duration_ms=min_silence_duration_ms)
    window_size_samples = 512
    events = []
    for i in range(0, len(wav), window_size_samples):
        chunk = wav[i: i + window_size_samples]
        if len(chunk) < window_size_samples:
            break
        speech_dict = vad_iterator(chunk, return_seconds=return_seconds)
        if speech_dict:
            events.append(speech_dict)
    vad_iterator.reset_states()
    return events


stream_compiled = torch.compile(stream)


def make():
    torch.manual_seed(0)
    model = SileroVAD().eval()
    with torch.no_grad():
        model.proj.weight.zero_()
        model.proj.weight[0, 64:] = 1.0 / 512
    loud = torch.ones(512)
    quiet = -torch.ones(512)
    wav = torch.cat([quiet, loud, loud, quiet, quiet, quiet, quiet])
    return stream, [(model, wav), (model, wav, True, 30)]
