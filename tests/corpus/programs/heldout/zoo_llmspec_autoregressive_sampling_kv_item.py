"""Plain autoregressive sampling baseline with HF-style KV cache: a while loop that feeds the whole prompt first, then only the last token with `past_key_values` (truthiness of the cache tuple picks the branch), normalises the last logits and samples with `sample` (`idx_next.item() == 0` check).

Source: feifeibear/LLMSpeculativeSampling@02d664be4f39a93bfaf3e80f9cb4e58499b43310:sampling/autoregressive_sampling.py:1-33
Source: feifeibear/LLMSpeculativeSampling@02d664be4f39a93bfaf3e80f9cb4e58499b43310:sampling/utils.py:1-60
Kept: autoregressive_sampling (@torch.no_grad, `n = len(x)`, the
past_key_values branch, pbar updates) and utils.top_k_top_p_filter,
norm_logits, sample, max_fn verbatim.
Simplified: tqdm is a minimal stand-in class with the same enter/update use;
the HF model is a one-layer causal LM with a (k, v) cache returning `.logits`
and `.past_key_values` (vocab 32, token 0 made unlikely so `sample` never
raises).
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
def autoregressive_sampling(x : torch.Tensor, model : torch.nn.Module, N : int,
                            temperature : float = 1, top_k : int = 0, top_p : float = 0):
    n = len(x)
    T = len(x) + N

    past_key_values = None
    with tqdm(total=N, desc="autoregressive sampling") as pbar:
        while n < T:
            # outputs = model(x)
            if past_key_values:
                last_ids = x[:, -1]
                if last_ids.dim() == 1:
                    last_ids = torch.unsqueeze(last_ids, 0)
                outputs = model(last_ids, past_key_values = past_key_values, use_cache = True)
            else:
                outputs = model(x)
            last_p = norm_logits(outputs.logits[::, -1, :], temperature, top_k, top_p)
            past_key_values = outputs.past_key_values
            idx_next = sample(last_p)
            x = torch.cat((x, idx_next), dim=1)
            n += 1
            pbar.update(1)

    return x


def benchmark_baseline(model, input_ids, num_tokens):
    sampler = torch.compile(autoregressive_sampling, backend="inductor")
    return sampler(input_ids, model, num_tokens, top_k=10, top_p=0.9)


def make():
    torch.manual_seed(0)
    model = TinyCausalLM().eval()
    input_ids = torch.tensor([[3, 4, 5, 6]])
    return autoregressive_sampling, [
        (input_ids, model, 3),
        (input_ids, model, 2, 1, 10, 0.9),
    ]
