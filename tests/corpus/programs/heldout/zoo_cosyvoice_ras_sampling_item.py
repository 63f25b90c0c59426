"""CosyVoice LLM token sampling: repetition-aware sampling counts recent repeats with `.sum().item()`, nucleus sampling accumulates a tensor `cum_prob` inside a Python `for`/`if`, and `sampling_ids` retries while `self.speech_token_size not in top_ids`.

Source: FunAudioLLM/CosyVoice@07352a50b30c8f8f07e5d2c15841710aa49b99df:cosyvoice/utils/common.py:103-131
Also: cosyvoice/llm/llm.py TransformerLM.sampling_ids (the `num_trials`/`max_trials`
retry loop with `self.speech_token_size not in top_ids`) and the per-step body of
TransformerLM.inference (`logp = self.llm_decoder(y_pred[:, -1]).log_softmax(dim=-1)`,
`self.sampling_ids(...).item()`, `ignore_eos=True if i < min_len else False`, under
`@torch.inference_mode()`);
conf/cosyvoice.yaml binds `sampling: !name:cosyvoice.utils.common.ras_sampling` with
top_p 0.8, top_k 25, win_size 10, tau_r 0.1.
Kept: ras_sampling, nucleus_sampling, random_sampling verbatim; sampling_ids verbatim.
Simplified: the LLM backbone is not run: `decode_step` takes its last hidden states
`y_pred`; vocabulary of 16 speech tokens (+1 eos); functools.partial stands in for the
hyperpyyaml binding.
"""
from functools import partial
from typing import List

import torch
from torch import nn


# Repetition Aware Sampling in VALL-E 2
def ras_sampling(weighted_scores, decoded_tokens, sampling, top_p=0.8, top_k=25, win_size=10, tau_r=0.1):
    top_ids = nucleus_sampling(weighted_scores, top_p=top_p, top_k=top_k)
    rep_num = (torch.tensor(decoded_tokens[-win_size:]).to(weighted_scores.device) == top_ids).sum().item()
    if rep_num >= win_size * tau_r:
        top_ids = random_sampling(weighted_scores, decoded_tokens, sampling)
    return top_ids


def nucleus_sampling(weighted_scores, top_p=0.8, top_k=25):
    prob, indices = [], []
    cum_prob = 0.0
    sorted_value, sorted_idx = weighted_scores.softmax(dim=0).sort(descending=True, stable=True)
    for i in range(len(sorted_idx)):
        # sampling both top-p and numbers.
        if cum_prob < top_p and len(prob) < top_k:
            cum_prob += sorted_value[i]
            prob.append(sorted_value[i])
            indices.append(sorted_idx[i])
        else:
            break
    prob = torch.tensor(prob).to(weighted_scores)
    indices = torch.tensor(indices, dtype=torch.long).to(weighted_scores.device)
    top_ids = indices[prob.multinomial(1, replacement=True)]
    return top_ids


def random_sampling(weighted_scores, decoded_tokens, sampling):
    top_ids = weighted_scores.softmax(dim=0).multinomial(1, replacement=True)
    return top_ids


class TransformerLM(torch.nn.Module):
    def __init__(self, llm_output_size: int, speech_token_size: int, sampling=None):
        super().__init__()
        self.speech_token_size = speech_token_size
        self.llm_decoder = nn.Linear(llm_output_size, speech_token_size + 1)
        # 4. sampling method
        self.sampling = sampling

    def sampling_ids(
            self,
            weighted_scores: torch.Tensor,
            decoded_tokens: List,
            sampling: int,
            ignore_eos: bool = True,
    ):
        num_trials, max_trials = 0, 100
        while True:
            top_ids = self.sampling(weighted_scores, decoded_tokens, sampling)
            if (not ignore_eos) or (self.speech_token_size not in top_ids):
                break
            num_trials += 1
            if num_trials > max_trials:
                raise RuntimeError('sampling reaches max_trials {} and still get eos when ignore_eos is True, check your input!'.format(max_trials))
        return top_ids

    @torch.inference_mode()
    def decode_step(self, y_pred, out_tokens, sampling=25, i=0, min_len=2):
        # one iteration of TransformerLM.inference's "step by step decode" loop
        logp = self.llm_decoder(y_pred[:, -1]).log_softmax(dim=-1)
        top_ids = self.sampling_ids(logp.squeeze(dim=0), out_tokens, sampling, ignore_eos=True if i < min_len else False).item()
        return top_ids


def build_llm() -> TransformerLM:
    sampling = partial(ras_sampling, top_p=0.8, top_k=25, win_size=10, tau_r=0.1)
    return TransformerLM(llm_output_size=8, speech_token_size=16, sampling=sampling).eval()


llm = build_llm()
decode_step = torch.compile(llm.decode_step)


def make():
    torch.manual_seed(0)
    model = build_llm()
    with torch.no_grad():
        model.llm_decoder.bias[model.speech_token_size] = 4.0  # eos is a likely draw
    y_pred = torch.randn(1, 3, 8)
    return model.decode_step, [
        (y_pred, [], 25, 0, 2),
        (y_pred, [3, 10, 14, 0, 16, 3, 10, 14, 0, 16, 3, 10], 25, 5, 2),
    ]
