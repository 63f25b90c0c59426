"""Speculative sampling, DeepMind variant without KV cache: the draft model proposes `gamma` tokens in a Python loop, both models' logits are normalised row by row, and each token is accepted with `if r < torch.min(...)`; `sample` checks `idx_next.item() == 0`.

Source: feifeibear/LLMSpeculativeSampling@02d664be4f39a93bfaf3e80f9cb4e58499b43310:sampling/speculative_sampling.py:96-166
Source: feifeibear/LLMSpeculativeSampling@02d664be4f39a93bfaf3e80f9cb4e58499b43310:sampling/utils.py:1-60
Kept: speculative_sampling_v2 (@torch.no_grad, while loop, accept/reject
loop, max_fn resampling, pbar updates) and utils.top_k_top_p_filter,
norm_logits, sample, max_fn verbatim.
Simplified: tqdm is a minimal stand-in class with the same enter/update use;
the HF draft/target models are one-layer causal LMs returning an object with
`.logits` (vocab 32, token 0 made unlikely so `sample` never raises).
"""
import torch
from torch import nn
from torch.nn import functional as F


class tqdm:
    """Stand-in for tqdm.tqdm: the progress bar the sampler drives."""
    def __init__(self, total=None, desc=None):
        self.total = total
        self.desc = desc
        self.n = 0

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def update(self, n=1):
        self.n += n


class CausalLMOutput:
    def __init__(self, logits, past_key_values=None):
        self.logits = logits
        self.past_key_values = past_key_values


class TinyCausalLM(nn.Module):
    """Stand-in for a HF causal LM (`model(ids, past_key_values=..., use_cache=True).logits`)."""
    def __init__(self, vocab_size=32, dim=16):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.lm_head = nn.Linear(dim, vocab_size)
        with torch.no_grad():
            self.lm_head.bias[0] = -30.0  # token 0 is never sampled

    @property
    def device(self):
        return self.embed.weight.device

    def forward(self, input_ids, past_key_values=None, use_cache=False):
        h = self.embed(input_ids)
        q, k, v = self.qkv(h).unsqueeze(1).chunk(3, dim=-1)
        if past_key_values is not None:
            past_k, past_v = past_key_values[0]
            k = torch.cat([past_k, k], dim=2)
            v = torch.cat([past_v, v], dim=2)
        causal = q.shape[2] > 1
        o = F.scaled_dot_product_attention(q, k, v, is_causal=causal and past_key_values is None)
        logits = self.lm_head(h + o.squeeze(1))
        return CausalLMOutput(logits, ((k, v),))


# copy from https://github.com/LeeSinLiang/microGPT/blob/ed40cf9780dbeb180adfe94c227d4aa97e69250e/gpt.py
def top_k_top_p_filter(logits: torch.Tensor, top_k: int = 0, top_p: float = 0.0):
    """

    Args:
        logits (torch.Tensorpe_): 2D tensor with shape (batch, vocab)
        top_k (int, optional): top_k. Defaults to 0.
        top_p (float, optional): top_p. Defaults to 0.0.

    Returns:
        torch.Tensor: a renormalized logits
    """
    if top_k > 0:
        filter = torch.topk(logits, min(top_k, logits.size(-1)))[0]
        logits[logits < filter[:, [-1]]] = float('-inf')
    if top_p > 0.0:
        sorted_logits, sorted_indices = torch.sort(logits, descending=True)
        cumulative_probs = torch.cumsum(
            F.softmax(sorted_logits, dim=-1), dim=-1)
        filter = cumulative_probs > top_p
        filter[..., 1:] = filter[..., :-1].clone()
        filter[..., 0] = 0
        indices_to_remove = filter.scatter(1, sorted_indices, filter)
        logits[indices_to_remove] = float('-inf')
    return logits


def norm_logits(logits : torch.Tensor, temperature : float, top_k : float, top_p : float) -> torch.Tensor:
    """

    Args:
        logits (torch.Tensor): shape (1, vocab)
        temperature (float): temperature
        top_k (float): top_k
        top_p (float): top_p

    Returns:
        torch.Tensor: next token with shape as (batch,  1)
    """
    assert logits.dim() == 2
    logits = logits / temperature
    logits = top_k_top_p_filter(logits, top_k=top_k, top_p=top_p)
    probs = F.softmax(logits, dim=1)
    return probs


def sample(probs : torch.Tensor, num_samples: int = 1, random_seed = None):
    if random_seed:
        torch.manual_seed(random_seed)
    idx_next = torch.multinomial(probs, num_samples=num_samples)
    if (idx_next.item() == 0):
        raise RuntimeError
    return idx_next


def max_fn(x):
    """
        norm(max (x, 0))
    """
    x_max = torch.where(x > 0, x, torch.zeros_like(x))
    x_max_sum = torch.sum(x_max, dim=1, keepdim=True)
    return x_max / x_max_sum


@torch.no_grad()
def speculative_sampling_v2(prefix : torch.Tensor, approx_model : torch.nn.Module, target_model : torch.nn.Module,
                         max_len : int , gamma : int = 4,
                         temperature : float = 1, top_k : int = 0, top_p : float = 0, random_seed : int = None) -> torch.Tensor:
    """
    DeepMind version Speculative Sampling.
    Accelerating Large Language Model Decoding with Speculative Sampling
    https://arxiv.org/abs/2302.01318
    No KV Cache Optimization

    Args:
        x (torch.Tensor): input sequence, (batch, prefix_seqlen), Note that the batch dim is always 1 now.
        approx_model (torch.nn.Module): approx model, the small one
        target_model (torch.nn.Module): target model, the large one
        max_len (int): the max overall generated tokens number.
        gamma (int): $\\gamma$, the token number small model guesses.
        temperature (float, optional): Defaults to 1.
        top_k (int, optional): Defaults to 0.
        top_p (float, optional): Defaults to 0.

    Returns:
        torch.Tensor: generated tokens (batch, target_seqlen)
    """
    seq_len = prefix.shape[1]
    T = seq_len + max_len

    assert prefix.shape[0] == 1, "input batch size must be 1"

    with tqdm(total=T, desc="speculative sampling") as pbar:
        while prefix.shape[1] < T:
            # q = M_q[prefix + x_0, x_1, .., x_(gamma-2)]
            x = prefix
            prefix_len = prefix.shape[1]
            for _ in range(gamma):
                # p.logits shape (batch, seq, vocab)
                q = approx_model(x).logits
                next_tok = sample(norm_logits(q[:, -1, :],
                                  temperature, top_k, top_p), random_seed = random_seed)
                x = torch.cat((x, next_tok), dim=1)

            # normalize the logits
            for i in range(q.shape[1]):
                q[:,i,:] = norm_logits(q[:,i,:],
                                temperature, top_k, top_p)
            # p  = M_p[prefix + x_0, x_0, .., x_(gamma-1)]
            p = target_model(x).logits
            for i in range(p.shape[1]):
                p[:,i,:] = norm_logits(p[:,i,:],
                                temperature, top_k, top_p)

            # n the end position of the valid prefix
            # x = x_[:prefix_len-1] + x_0, ... x_(gamma-1)

            is_all_accept = True
            n = prefix_len - 1
            for i in range(gamma):
                r = torch.rand(1, device = p.device)
                j = x[:, prefix_len + i]

                if r < torch.min(torch.tensor([1], device=q.device), p[:, prefix_len + i - 1, j] / q[:, prefix_len + i - 1, j]):
                    # accept, and update n
                    n += 1
                else:
                    # reject
                    t = sample(max_fn(p[:, n, :] - q[:, n, :]), random_seed = random_seed)
                    is_all_accept = False
                    break

            prefix = x[:, :n + 1]

            if is_all_accept:
                t = sample(p[:, -1, :], random_seed = random_seed)

            prefix = torch.cat((prefix, t), dim=1)
            pbar.update(n - pbar.n)

    return prefix


def main():
    approx_model = TinyCausalLM().eval()
    target_model = TinyCausalLM().eval()
    sampler = torch.compile(speculative_sampling_v2)
    prefix = torch.tensor([[5, 6, 7]])
    return sampler(prefix, approx_model, target_model, max_len=6, gamma=3)


def make():
    torch.manual_seed(0)
    approx_model = TinyCausalLM().eval()
    target_model = TinyCausalLM().eval()
    prefix = torch.tensor([[5, 6, 7]])
    return speculative_sampling_v2, [
        (prefix, approx_model, target_model, 4, 2),
        (prefix, approx_model, target_model, 3, 2, 1, 5, 0.9),
    ]
