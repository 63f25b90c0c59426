"""Top-H sampling warper: a `torch.distributions.Categorical` over the top-n logits, cumulative entropy against a threshold, scatter into a keep mask, masked fill.

Source: huggingface/transformers@v5.23.0:src/transformers/generation/logits_process.py:627-730
Kept: TopHLogitsWarper verbatim (constructor range check, `top_n = 100`
capped by the vocab, topk, Categorical(logits=...) probs / entropy, the
cumulative entropy stopping rule with the first token always kept,
`keep_mask.scatter_`, and `scores_processed[~keep_mask] = filter_value`).
Simplified: the sampling step around it is softmax + multinomial; vocab 32.
"""
import torch


class TopHLogitsWarper:
    def __init__(self, top_h: float, filter_value: float = -float("Inf")):
        super().__init__()

        # input checks
        if not (0 < top_h <= 1):
            raise ValueError("`top_h` must be in the range (0, 1].")

        # Maximum number of top tokens to consider before applying the entropy-based filter.
        self.top_n = 100

        self.top_h = top_h
        self.filter_value = filter_value

    def __call__(self, input_ids: torch.LongTensor, scores: torch.Tensor) -> torch.Tensor:
        batch_size, vocab_size = scores.shape
        device = scores.device
        keep_mask = torch.zeros((batch_size, vocab_size), dtype=torch.bool, device=device)
        top_n = min(self.top_n, vocab_size)

        # 1. Get top-k logits and indices for the whole batch
        top_logits, top_idx = torch.topk(scores, top_n, dim=-1, largest=True, sorted=True)

        # 2. Create a batch of categorical distributions
        dist = torch.distributions.Categorical(logits=top_logits)
        probs = dist.probs
        log_probs = torch.log(probs)  # dist.log_prob(idx)

        # 3. Calculate the entropy-based threshold tau for the whole batch
        tau = (dist.entropy() * self.top_h).unsqueeze(-1)

        # 4. Calculate cumulative entropy using torch.cumsum
        entropy_terms = -probs * log_probs
        cumulative_entropy = torch.cumsum(entropy_terms, dim=-1)

        # 5. Determine which tokens to keep based on the stopping condition
        selection_mask = cumulative_entropy <= tau
        selection_mask[:, 0] = True

        # 6. Update the final keep_mask for the entire batch in one operation
        keep_mask.scatter_(dim=1, index=top_idx, src=selection_mask)

        # apply filtering
        scores_processed = scores.clone()
        scores_processed[~keep_mask] = self.filter_value
        return scores_processed


warper = TopHLogitsWarper(top_h=0.4)


@torch.compile(dynamic=False)
def sample_next_tokens(input_ids, next_token_logits):
    next_token_scores = warper(input_ids, next_token_logits)
    probs = torch.nn.functional.softmax(next_token_scores, dim=-1)
    next_tokens = torch.multinomial(probs, num_samples=1).squeeze(1)
    return torch.cat([input_ids, next_tokens[:, None]], dim=-1)


def make():
    torch.manual_seed(0)
    ids = torch.randint(0, 32, (2, 4))
    logits = torch.randn(2, 32) * 3
    return sample_next_tokens._torchdynamo_orig_callable, [(ids, logits)]
