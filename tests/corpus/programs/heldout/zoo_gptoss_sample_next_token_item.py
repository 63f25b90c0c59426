"""gpt-oss sampling helper: greedy or temperature sampling of the next token, rank-0 only, returned as a Python int via `.item()`.

Source: openai/gpt-oss@397fee3baa9222170cb74aa63753d884cc569b7d:gpt_oss/torch/sampling.py:1-23
Kept: sample_next_token verbatim (dist.is_initialized / get_rank plumbing,
temperature == 0.0 branch, multinomial, broadcast branch, int(token.item())).
Simplified: called directly on a 1-D logits row of a 32-token vocabulary.
"""
import torch
import torch.distributed as dist


@torch.compile
def sample_next_token(logits: torch.Tensor, temperature: float) -> int:
    """Sample one token and keep model-parallel ranks on the same token history."""
    distributed = dist.is_initialized()
    rank = dist.get_rank() if distributed else 0

    if rank == 0:
        if temperature == 0.0:
            token = torch.argmax(logits, dim=-1).to(torch.long)
        else:
            probs = torch.softmax(logits * (1.0 / temperature), dim=-1)
            token = torch.multinomial(probs, num_samples=1).squeeze(0)
    else:
        token = torch.empty((), dtype=torch.long, device=logits.device)

    if distributed:
        dist.broadcast(token, src=0)

    return int(token.item())


def make():
    torch.manual_seed(0)
    logits = torch.randn(32)
    return sample_next_token._torchdynamo_orig_callable, [(logits, 0.0), (logits, 0.7)]
