"""WeNet CTC greedy search: top-1 ids masked by make_pad_mask, `hyp.tolist()` per utterance, then remove_duplicates_and_blank's nested while loops build DecodeResult objects.

Source: wenet-e2e/wenet@015469960db73eb19c49a48c020d5ac9db69bae5:wenet/models/transformer/search.py:30-62,109-124
Also: wenet/utils/ctc_utils.py:23-33 (remove_duplicates_and_blank),
wenet/utils/mask.py:201-227 (make_pad_mask), wenet/models/transformer/ctc.py:73-81
(CTC.log_softmax), wenet/models/transformer/asr_model.py:254-265,309-323
(ctc_logprobs with blank_penalty, the greedy branch of decode).
Kept: DecodeResult, ctc_greedy_search verbatim (topk, view, masked_fill_,
the list comprehension of tolist(), unused `scores`), make_pad_mask with
its `lengths.max().item()` fallback, ctc_logprobs' blank-penalty in-place
subtraction, decode's encoder_lens from the mask and the methods dict.
Simplified: the conformer encoder is a Linear + mask from lengths; only
the 'ctc_greedy_search' method; vocab 6, 2 utterances of up to 7 frames.
"""
from typing import List

import torch
import torch.nn.functional as F
from torch import nn


class DecodeResult:

    def __init__(self,
                 tokens: List[int],
                 score: float = 0.0,
                 confidence: float = 0.0,
                 tokens_confidence: List[float] = None,
                 times: List[int] = None,
                 nbest: List[List[int]] = None,
                 nbest_scores: List[float] = None,
                 nbest_times: List[List[int]] = None,
                 text: str = ''):
        self.tokens = tokens
        self.score = score
        self.confidence = confidence
        self.tokens_confidence = tokens_confidence
        self.times = times
        self.nbest = nbest
        self.nbest_scores = nbest_scores
        self.nbest_times = nbest_times
        self.text = text


def remove_duplicates_and_blank(hyp: List[int],
                                blank_id: int = 0) -> List[int]:
    new_hyp: List[int] = []
    cur = 0
    while cur < len(hyp):
        if hyp[cur] != blank_id:
            new_hyp.append(hyp[cur])
        prev = cur
        while cur < len(hyp) and hyp[cur] == hyp[prev]:
            cur += 1
    return new_hyp


def make_pad_mask(lengths: torch.Tensor, max_len: int = 0) -> torch.Tensor:
    batch_size = lengths.size(0)
    max_len = max_len if max_len > 0 else lengths.max().item()
    seq_range = torch.arange(0,
                             max_len,
                             dtype=torch.int64,
                             device=lengths.device)
    seq_range_expand = seq_range.unsqueeze(0).expand(batch_size, max_len)
    seq_length_expand = lengths.unsqueeze(-1)
    mask = seq_range_expand >= seq_length_expand
    return mask


def ctc_greedy_search(ctc_probs: torch.Tensor,
                      ctc_lens: torch.Tensor,
                      blank_id: int = 0) -> List[DecodeResult]:
    batch_size = ctc_probs.shape[0]
    maxlen = ctc_probs.size(1)
    topk_prob, topk_index = ctc_probs.topk(1, dim=2)  # (B, maxlen, 1)
    topk_index = topk_index.view(batch_size, maxlen)  # (B, maxlen)
    mask = make_pad_mask(ctc_lens, maxlen)  # (B, maxlen)
    topk_index = topk_index.masked_fill_(mask, blank_id)  # (B, maxlen)
    hyps = [hyp.tolist() for hyp in topk_index]
    scores = topk_prob.max(1)
    results = []
    for hyp in hyps:
        r = DecodeResult(remove_duplicates_and_blank(hyp, blank_id))
        results.append(r)
    return results


class CTC(nn.Module):
    def __init__(self, odim: int, encoder_output_size: int):
        super().__init__()
        self.ctc_lo = nn.Linear(encoder_output_size, odim)

    def log_softmax(self, hs_pad: torch.Tensor) -> torch.Tensor:
        return F.log_softmax(self.ctc_lo(hs_pad), dim=2)


class ASRModel(nn.Module):
    def __init__(self, vocab_size: int, input_dim: int, output_size: int):
        super().__init__()
        self.encoder = nn.Linear(input_dim, output_size)
        self.ctc = CTC(vocab_size, output_size)

    def _forward_encoder(self, speech, speech_lengths):
        encoder_out = torch.tanh(self.encoder(speech))
        encoder_mask = ~make_pad_mask(speech_lengths, speech.size(1)).unsqueeze(1)  # (B, 1, T)
        return encoder_out, encoder_mask

    def ctc_logprobs(self,
                     encoder_out: torch.Tensor,
                     blank_penalty: float = 0.0,
                     blank_id: int = 0):
        if blank_penalty > 0.0:
            logits = self.ctc.ctc_lo(encoder_out)
            logits[:, :, blank_id] -= blank_penalty
            ctc_probs = logits.log_softmax(dim=2)
        else:
            ctc_probs = self.ctc.log_softmax(encoder_out)

        return ctc_probs

    def decode(self, methods: List[str], speech: torch.Tensor, speech_lengths: torch.Tensor,
               blank_id: int = 0, blank_penalty: float = 0.0):
        assert speech.shape[0] == speech_lengths.shape[0]
        encoder_out, encoder_mask = self._forward_encoder(speech, speech_lengths)
        encoder_lens = encoder_mask.squeeze(1).sum(1)
        ctc_probs = self.ctc_logprobs(encoder_out, blank_penalty, blank_id)
        results = {}
        if 'ctc_greedy_search' in methods:
            results['ctc_greedy_search'] = ctc_greedy_search(
                ctc_probs, encoder_lens, blank_id)
        return results


model = ASRModel(6, 4, 8).eval()
model.decode = torch.compile(model.decode)


def make():
    torch.manual_seed(0)
    model = ASRModel(6, 4, 8).eval()
    speech = torch.randn(2, 7, 4)
    speech_lengths = torch.tensor([7, 4])
    return model.decode, [
        (["ctc_greedy_search"], speech, speech_lengths),
        (["ctc_greedy_search"], speech, speech_lengths, 0, 2.0),
    ]
