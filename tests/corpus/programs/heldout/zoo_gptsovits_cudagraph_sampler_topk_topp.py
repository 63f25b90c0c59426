"""GPT-SoVITS T2S Sampler.sample: repetition penalty by gather/where/scatter_ over the previous
tokens, top-p by sort/cumsum/scatter, temperature through Python max(), top-k pivot, then the
exponential-race sampling (`empty_like().exponential_`, argmax) without a host sync.

Source: RVC-Boss/GPT-SoVITS@08d627c3338173c3229286d8787060d6559fe0f8:GPT_SoVITS/AR/models/t2s_model_cudagraph.py:29-71,504-513
Kept: the Sampler module and its sample() body verbatim; the call as the runner makes it
(keyword arguments from the request, previous_tokens = the token history so far).
Simplified: vocabulary 33 (EOS 32), batch 2, a history of 5 tokens; the compiled callable is
the bound sample method.
"""
import torch
import torch.nn as nn

Tensor = torch.Tensor


class Sampler(nn.Module):
    def __init__(self, batch_size: int, vocab_size: int) -> None:
        super().__init__()
        self.batch_size = batch_size

    def sample(
        self,
        logits: Tensor,
        previous_tokens: Tensor,
        temperature: float,
        top_k: int,
        top_p: float,
        repetition_penalty: float,
    ) -> Tensor:
        previous_tokens = previous_tokens.long()
        score = torch.gather(logits, dim=1, index=previous_tokens)
        score = torch.where(
            score < 0, score * repetition_penalty, score / repetition_penalty
        )
        logits.scatter_(dim=1, index=previous_tokens, src=score)

        sorted_logits, sorted_indices = torch.sort(logits, descending=True)
        cum_probs = torch.cumsum(
            torch.nn.functional.softmax(sorted_logits, dim=-1), dim=-1
        )
        sorted_indices_to_remove = cum_probs > top_p
        sorted_indices_to_remove[:, 0] = False
        indices_to_remove = sorted_indices_to_remove.scatter(
            dim=1, index=sorted_indices, src=sorted_indices_to_remove
        )
        logits = logits.masked_fill(indices_to_remove, -float("Inf"))

        logits = logits / max(temperature, 1e-5)

        v, _ = torch.topk(logits, top_k)
        pivot = v[:, -1].unsqueeze(-1)
        logits = torch.where(logits < pivot, -float("Inf"), logits)

        probs = torch.nn.functional.softmax(logits, dim=-1)
        q = torch.empty_like(probs).exponential_(1.0)
        idx_next = torch.argmax(probs / q, dim=-1, keepdim=True).to(dtype=torch.int32)

        return idx_next


sampler = Sampler(2, 33)
sampler.sample = torch.compile(sampler.sample)


def make():
    torch.manual_seed(0)
    s = Sampler(2, 33)
    logits = torch.randn(2, 33)
    y = torch.randint(0, 32, (2, 5), dtype=torch.int32)
    return s.sample, [
        (logits.clone(), y, 1.0, 15, 1.0, 1.35),
        (logits.clone(), y, 0.6, 5, 0.8, 1.35),
    ]
