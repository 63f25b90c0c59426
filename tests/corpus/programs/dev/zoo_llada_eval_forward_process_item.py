"""LLaDA lm-eval harness: `get_loglikelihood`'s Monte Carlo loop over `_forward_process` (`.item()` of the target length, `torch.randint(1, target_len + 1, ())`, per-row `randperm` masks) and `get_logits`, with `loss.item()` accumulated in a Python list.

Source: ML-GSAI/LLaDA@dacecade77067eb2ce1f83bbdfadb48b83200135:eval_llada.py:33-194
Kept: LLaDAEvalHarness' attribute plumbing (mask_id, mc_num, batch_size, cfg,
is_check_greedy, the mc_num % batch_size assert) and _forward_process,
get_logits, get_loglikelihood, suffix_greedy_prediction verbatim.
Simplified: no accelerate/lm_eval/tokenizer (LM is a stub base class, the
model is passed in instead of AutoModel.from_pretrained); the 8B model is a
tiny embedding + linear mask predictor returning `.logits`; vocab 32,
mask_id 31, mc_num 4, batch_size 2, device "cpu".
"""
import random

import torch
import numpy as np
import torch.nn.functional as F
from torch import nn


class MaskedLMOutput:
    def __init__(self, logits):
        self.logits = logits


class TinyMaskPredictor(nn.Module):
    def __init__(self, vocab_size=32, dim=16):
        super().__init__()
        self.wte = nn.Embedding(vocab_size, dim)
        self.mix = nn.Linear(dim, dim)
        self.lm_head = nn.Linear(dim, vocab_size)

    def forward(self, input_ids):
        h = self.wte(input_ids)
        h = h + torch.tanh(self.mix(h.mean(dim=1, keepdim=True)))
        return MaskedLMOutput(self.lm_head(h))


class LM:
    """lm_eval.api.model.LM (only what the harness uses)."""

    def __init__(self):
        self._rank = 0
        self._world_size = 1


class LLaDAEvalHarness(LM):
    def __init__(
        self,
        model=None,
        mask_id=126336,
        max_length=4096,
        batch_size=32,
        mc_num=128,
        is_check_greedy=True,
        cfg=0.,
        steps=1024,
        gen_length=1024,
        block_length=1024,
        remasking='low_confidence',
        device="cuda",
        **kwargs,
    ):
        super().__init__()

        self.accelerator = None

        self.model = model
        self.model.eval()

        self.device = torch.device(device)

        self.model = self.model.to(device)

        self.mask_id = mask_id

        self.mc_num = mc_num
        self.batch_size = int(batch_size)
        assert mc_num % self.batch_size == 0
        self.sampling_eps = 0.
        self.max_length = max_length
        self.is_check_greedy = is_check_greedy

        self.cfg = cfg
        self.steps = steps
        self.gen_length = gen_length
        self.block_length = block_length
        self.remasking = remasking
    @property
    def rank(self):
        return self._rank

    @property
    def world_size(self):
        return self._world_size

    def _forward_process(self, batch, prompt_index):
        b, l = batch.shape

        target_len = (l - prompt_index.sum()).item()
        k = torch.randint(1, target_len + 1, (), device=batch.device)

        x = torch.round(torch.linspace(float(k), k + (b - 1) * (target_len / b), steps=b, device=batch.device)).long()
        x = ((x - 1) % target_len) + 1
        assert x.min() >= 1 and x.max() <= target_len

        indices = torch.arange(target_len, device=batch.device).repeat(b, 1)
        is_mask = indices < x.unsqueeze(1)

        for i in range(b):
            is_mask[i] = is_mask[i][torch.randperm(target_len)]

        is_mask = torch.cat((torch.zeros(b, prompt_index.sum(), dtype=torch.bool, device=batch.device), is_mask), dim=1)

        noisy_batch = torch.where(is_mask, self.mask_id, batch)

        return noisy_batch, (x / target_len).unsqueeze(1).repeat(1, l)

    @torch.no_grad()
    def get_logits(self, batch, prompt_index):
        if self.cfg > 0.:
            assert len(prompt_index) == batch.shape[1]
            prompt_index = prompt_index.unsqueeze(0).repeat(batch.shape[0], 1)
            un_batch = batch.clone()
            un_batch[prompt_index] = self.mask_id
            batch = torch.cat([batch, un_batch])

        logits = self.model(batch).logits

        if self.cfg > 0.:
            logits, un_logits = torch.chunk(logits, 2, dim=0)
            logits = un_logits + (self.cfg + 1) * (logits - un_logits)
        return logits[:, :batch.shape[1]]

    @torch.no_grad()
    def get_loglikelihood(self, prefix, target):
        seq = torch.concatenate([prefix, target])[None, :]
        seq = seq.repeat((self.batch_size, 1)).to(self.device)

        prompt_index = torch.arange(seq.shape[1], device=self.device) < len(prefix)

        loss_acc = []
        for _ in range(self.mc_num // self.batch_size):
            perturbed_seq, p_mask = self._forward_process(seq, prompt_index)

            mask_indices = perturbed_seq == self.mask_id

            logits = self.get_logits(perturbed_seq, prompt_index)

            loss = F.cross_entropy(logits[mask_indices], seq[mask_indices], reduction='none') / p_mask[mask_indices]
            loss = loss.sum() / self.batch_size
            loss_acc.append(loss.item())

        return - sum(loss_acc) / len(loss_acc)

    @torch.no_grad()
    def suffix_greedy_prediction(self, prefix, target):
        if not self.is_check_greedy:
            return False

        seq = torch.full((1, len(prefix) + len(target)), self.mask_id, device=self.device)
        prompt_index = torch.arange(seq.shape[1], device=self.device) < len(prefix)
        prefix, target = prefix.to(self.device), target.to(self.device)
        seq[0, :len(prefix)] = prefix

        for i in range(len(target)):
            mask_index = (seq == self.mask_id)
            logits = self.get_logits(seq, prompt_index)[mask_index]
            x0 = torch.argmax(logits, dim=-1)

            p = torch.softmax(logits.to(torch.float32), dim=-1)
            confidence = torch.gather(p, dim=-1, index=torch.unsqueeze(x0, -1)).squeeze(dim=-1)
            _, index = torch.sort(confidence, descending=True)
            x0[index[1:]] = self.mask_id
            seq[mask_index] = x0.clone()
        correct = target == seq[0, len(prefix):]
        correct = torch.all(correct)
        return correct


harness = LLaDAEvalHarness(TinyMaskPredictor(), mask_id=31, batch_size=2, mc_num=4, device="cpu")
harness.get_loglikelihood = torch.compile(harness.get_loglikelihood)


def make():
    torch.manual_seed(0)
    harness = LLaDAEvalHarness(TinyMaskPredictor(), mask_id=31, batch_size=2, mc_num=4, device="cpu")
    prefix = torch.randint(0, 31, (3,))
    target = torch.randint(0, 31, (4,))
    return harness.get_loglikelihood, [(prefix, target), (prefix[:2], target[:2])]
