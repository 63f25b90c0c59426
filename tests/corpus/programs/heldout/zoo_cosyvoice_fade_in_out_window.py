"""CosyVoice streaming token2wav: per-session mel-overlap and HiFT caches kept in dicts keyed by a uuid, `fade_in_out` cross-fading with numpy Hamming windows after a `.cpu()` round trip, and speed change by `F.interpolate(size=int(tts_mel.shape[2] / speed))`.

Source: FunAudioLLM/CosyVoice@014fed4405592b113cbe60104ad5543d6f821cf5:cosyvoice/cli/model.py:25-134
Also: cosyvoice/utils/common.py@07352a50b30c8f8f07e5d2c15841710aa49b99df:134-142 (fade_in_out).
Kept: CosyVoiceModel.__init__'s overlap/cache arithmetic and windows, token2wav verbatim
(the `shape[2] != 0` and `is not None` cache checks, the finalize/speed branches,
the cache dict written back), fade_in_out verbatim.
Simplified: the flow-matching decoder and the HiFT vocoder are small stand-ins with the
same `@torch.inference_mode()` `inference(...)` keywords and tuple returns (80 mels,
256x upsampling); no
threading/fp16/jit/onnx loaders; sessions are prepared by make() the way tts() does
(`mel_overlap_dict[uuid] = torch.zeros(1, 80, 0)`, `hift_cache_dict[uuid] = None`).
"""
from contextlib import nullcontext
import threading

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F


def fade_in_out(fade_in_mel, fade_out_mel, window):
    device = fade_in_mel.device
    fade_in_mel, fade_out_mel = fade_in_mel.cpu(), fade_out_mel.cpu()
    mel_overlap_len = int(window.shape[0] / 2)
    if fade_in_mel.device == torch.device('cpu'):
        fade_in_mel = fade_in_mel.clone()
    fade_in_mel[..., :mel_overlap_len] = fade_in_mel[..., :mel_overlap_len] * window[:mel_overlap_len] + \
        fade_out_mel[..., -mel_overlap_len:] * window[mel_overlap_len:]
    return fade_in_mel.to(device)


class FlowStandIn(nn.Module):
    """Stands in for MaskedDiffWithXvec: inference(...) -> (mel (1, 80, 2T), flow_cache)."""

    input_frame_rate = 50

    def __init__(self, vocab_size=32, output_size=80):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, output_size)

    @torch.inference_mode()
    def inference(self, token, token_len, prompt_token, prompt_token_len, prompt_feat,
                  prompt_feat_len, embedding, flow_cache):
        h = self.embed(token).transpose(1, 2)
        mel = F.interpolate(h, scale_factor=2, mode='nearest')
        return mel, flow_cache


class HiFTStandIn(nn.Module):
    """Stands in for HiFTGenerator: inference(speech_feat, cache_source) -> (speech, source)."""

    def __init__(self, in_channels=80, hop=256):
        super().__init__()
        self.up = nn.ConvTranspose1d(in_channels, 1, hop, stride=hop)
        self.up_source = nn.ConvTranspose1d(in_channels, 1, hop, stride=hop)

    @torch.inference_mode()
    def inference(self, speech_feat, cache_source=torch.zeros(1, 1, 0)):
        s = torch.tanh(self.up_source(speech_feat))
        # use cache_source to avoid glitch
        if cache_source.shape[2] != 0:
            s[:, :, :cache_source.shape[2]] = cache_source
        speech = self.up(speech_feat).squeeze(1)
        return speech, s


class CosyVoiceModel:

    def __init__(self,
                 llm: torch.nn.Module,
                 flow: torch.nn.Module,
                 hift: torch.nn.Module,
                 fp16: bool):
        self.device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')
        self.llm = llm
        self.flow = flow
        self.hift = hift
        self.fp16 = fp16
        self.token_min_hop_len = 2 * self.flow.input_frame_rate
        self.token_max_hop_len = 4 * self.flow.input_frame_rate
        self.token_overlap_len = 20
        # mel fade in out
        self.mel_overlap_len = int(self.token_overlap_len / self.flow.input_frame_rate * 22050 / 256)
        self.mel_window = np.hamming(2 * self.mel_overlap_len)
        # hift cache
        self.mel_cache_len = 20
        self.source_cache_len = int(self.mel_cache_len * 256)
        # speech fade in out
        self.speech_window = np.hamming(2 * self.source_cache_len)
        # rtf and decoding related
        self.stream_scale_factor = 1
        assert self.stream_scale_factor >= 1, 'stream_scale_factor should be greater than 1, change it according to your actual rtf'
        self.llm_context = torch.cuda.stream(torch.cuda.Stream(self.device)) if torch.cuda.is_available() else nullcontext()
        self.lock = threading.Lock()
        # dict used to store session related variable
        self.tts_speech_token_dict = {}
        self.llm_end_dict = {}
        self.mel_overlap_dict = {}
        self.flow_cache_dict = {}
        self.hift_cache_dict = {}

    def token2wav(self, token, prompt_token, prompt_feat, embedding, uuid, finalize=False, speed=1.0):
        tts_mel, flow_cache = self.flow.inference(token=token.to(self.device),
                                                  token_len=torch.tensor([token.shape[1]], dtype=torch.int32).to(self.device),
                                                  prompt_token=prompt_token.to(self.device),
                                                  prompt_token_len=torch.tensor([prompt_token.shape[1]], dtype=torch.int32).to(self.device),
                                                  prompt_feat=prompt_feat.to(self.device),
                                                  prompt_feat_len=torch.tensor([prompt_feat.shape[1]], dtype=torch.int32).to(self.device),
                                                  embedding=embedding.to(self.device),
                                                  flow_cache=self.flow_cache_dict[uuid])
        self.flow_cache_dict[uuid] = flow_cache

        # mel overlap fade in out
        if self.mel_overlap_dict[uuid].shape[2] != 0:
            tts_mel = fade_in_out(tts_mel, self.mel_overlap_dict[uuid], self.mel_window)
        # append hift cache
        if self.hift_cache_dict[uuid] is not None:
            hift_cache_mel, hift_cache_source = self.hift_cache_dict[uuid]['mel'], self.hift_cache_dict[uuid]['source']
            tts_mel = torch.concat([hift_cache_mel, tts_mel], dim=2)
        else:
            hift_cache_source = torch.zeros(1, 1, 0)
        # keep overlap mel and hift cache
        if finalize is False:
            self.mel_overlap_dict[uuid] = tts_mel[:, :, -self.mel_overlap_len:]
            tts_mel = tts_mel[:, :, :-self.mel_overlap_len]
            tts_speech, tts_source = self.hift.inference(speech_feat=tts_mel, cache_source=hift_cache_source)
            if self.hift_cache_dict[uuid] is not None:
                tts_speech = fade_in_out(tts_speech, self.hift_cache_dict[uuid]['speech'], self.speech_window)
            self.hift_cache_dict[uuid] = {'mel': tts_mel[:, :, -self.mel_cache_len:],
                                          'source': tts_source[:, :, -self.source_cache_len:],
                                          'speech': tts_speech[:, -self.source_cache_len:]}
            tts_speech = tts_speech[:, :-self.source_cache_len]
        else:
            if speed != 1.0:
                assert self.hift_cache_dict[uuid] is None, 'speed change only support non-stream inference mode'
                tts_mel = F.interpolate(tts_mel, size=int(tts_mel.shape[2] / speed), mode='linear')
            tts_speech, tts_source = self.hift.inference(speech_feat=tts_mel, cache_source=hift_cache_source)
            if self.hift_cache_dict[uuid] is not None:
                tts_speech = fade_in_out(tts_speech, self.hift_cache_dict[uuid]['speech'], self.speech_window)
        return tts_speech

    def new_session(self, this_uuid):
        # the session set-up at the top of tts()
        with self.lock:
            self.tts_speech_token_dict[this_uuid], self.llm_end_dict[this_uuid] = [], False
            self.hift_cache_dict[this_uuid] = None
            self.mel_overlap_dict[this_uuid] = torch.zeros(1, 80, 0)
            self.flow_cache_dict[this_uuid] = torch.zeros(1, 80, 0, 2)


def build_model() -> CosyVoiceModel:
    model = CosyVoiceModel(None, FlowStandIn().eval(), HiFTStandIn().eval(), fp16=False)
    return model


cosyvoice_model = build_model()
cosyvoice_model.token2wav = torch.compile(cosyvoice_model.token2wav)


def make():
    torch.manual_seed(0)
    model = build_model()
    token = torch.randint(0, 32, (1, 40))
    prompt_token = torch.zeros(1, 0, dtype=torch.int32)
    prompt_feat = torch.zeros(1, 0, 80)
    embedding = torch.randn(1, 192)
    with torch.no_grad():
        for this_uuid in ("fresh", "fresh_speed", "warm"):
            model.new_session(this_uuid)
        # one streamed chunk already synthesised for the "warm" session
        model.token2wav(token, prompt_token, prompt_feat, embedding, "warm", finalize=False)
    return model.token2wav, [
        (token, prompt_token, prompt_feat, embedding, "fresh", False),
        (token, prompt_token, prompt_feat, embedding, "warm", False),
        (token[:, :30], prompt_token, prompt_feat, embedding, "warm", True),
        (token, prompt_token, prompt_feat, embedding, "fresh_speed", True, 1.25),
    ]
