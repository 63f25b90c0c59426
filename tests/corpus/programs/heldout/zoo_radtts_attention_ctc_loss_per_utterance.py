"""RAD-TTS AttentionCTCLoss: a per-utterance loop builds `torch.arange(1, key_lens[bid]+1)` targets and slices the padded alignment log-probs by tensor lengths before nn.CTCLoss.

Source: NVIDIA/radtts@c73f39f239636ff3dd70c7d1f698ac9b151319ae:loss.py:133-160
Kept: AttentionCTCLoss unchanged (LogSoftmax(dim=3) module, blank_logprob
padding with F.pad, nn.CTCLoss(zero_infinity=True), the bid loop with
tensor-valued slice bounds and length slices, cost_total accumulation and
the batch mean).
Simplified: RADTTSLoss, which calls it from a larger loss dict, is not
included; the training script's compiled criterion is written as
`torch.compile(AttentionCTCLoss())`. Batch 2, 4 text tokens, 6 mel frames.
"""
import torch
import torch.nn as nn
from torch.nn import functional as F


class AttentionCTCLoss(torch.nn.Module):
    def __init__(self, blank_logprob=-1):
        super(AttentionCTCLoss, self).__init__()
        self.log_softmax = torch.nn.LogSoftmax(dim=3)
        self.blank_logprob = blank_logprob
        self.CTCLoss = nn.CTCLoss(zero_infinity=True)

    def forward(self, attn_logprob, in_lens, out_lens):
        key_lens = in_lens
        query_lens = out_lens
        attn_logprob_padded = F.pad(
            input=attn_logprob, pad=(1, 0, 0, 0, 0, 0, 0, 0),
            value=self.blank_logprob)
        cost_total = 0.0
        for bid in range(attn_logprob.shape[0]):
            target_seq = torch.arange(1, key_lens[bid]+1).unsqueeze(0)
            curr_logprob = attn_logprob_padded[bid].permute(1, 0, 2)[
                :query_lens[bid], :, :key_lens[bid]+1]
            curr_logprob = self.log_softmax(curr_logprob[None])[0]
            ctc_cost = self.CTCLoss(curr_logprob, target_seq,
                                    input_lengths=query_lens[bid:bid+1],
                                    target_lengths=key_lens[bid:bid+1])
            cost_total += ctc_cost
        cost = cost_total/attn_logprob.shape[0]
        return cost


attn_ctc_loss = torch.compile(AttentionCTCLoss(blank_logprob=-1))


def make():
    torch.manual_seed(0)
    # B x 1 x T_mel x T_text, as RADTTS's alignment module returns it
    attn_logprob = torch.randn(2, 1, 6, 4)
    in_lens = torch.tensor([4, 3])
    out_lens = torch.tensor([6, 5])
    return AttentionCTCLoss(blank_logprob=-1), [(attn_logprob, in_lens, out_lens)]
