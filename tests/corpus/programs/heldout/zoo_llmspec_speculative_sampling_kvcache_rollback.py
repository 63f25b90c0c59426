"""Speculative sampling, Google variant with KV cache: `KVCacheModel` keeps `_past_key_values` and `_prob_history` on a plain Python object, the draft proposes `gamma` tokens, the target scores them, tokens are rejected with `if r > p / q`, and both caches are rolled back by slicing.

Source: feifeibear/LLMSpeculativeSampling@02d664be4f39a93bfaf3e80f9cb4e58499b43310:sampling/speculative_sampling.py:1-93
Source: feifeibear/LLMSpeculativeSampling@1da8d0a0636accdd50acb06b8a2b35e2fe61ae8f:sampling/kvcache_model.py:1-117
Source: feifeibear/LLMSpeculativeSampling@02d664be4f39a93bfaf3e80f9cb4e58499b43310:sampling/utils.py:1-60
Kept: speculative_sampling (@torch.no_grad, asserts with f-strings, the
verbose branches, torch.manual_seed(123) inside), KVCacheModel
(_forward_with_kvcache with its first-call / cached branches and debug print
helper, _generate_with_kvcache, generate, rollback) and utils verbatim.
Simplified: tqdm is a minimal stand-in class with the same enter/update use;
the Bloom isinstance check compares against a local placeholder class; the HF
models are one-layer causal LMs with a (k, v) cache returning `.logits` /
`.past_key_values` (vocab 32, token 0 made unlikely so `sample` never raises).
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


class BloomForCausalLM(nn.Module):
    """Placeholder for transformers.models.bloom.modeling_bloom.BloomForCausalLM."""


def _debug_show_kvcache(past_key_values):
    if  past_key_values is None:
        return
    for elem in past_key_values:
        k, v = elem
        print(f"kv cache: k shape {k.shape}, v shape {v.shape}")
        break

class KVCacheModel():
    def __init__(self, model : torch.nn.Module, temperature : float = 1, top_k : int = 0, top_p : float = 0, random_seed = None) -> None:
        self._model = model
        self._past_key_values = None
        self._prob_history = None

        self._temperature = temperature
        self._top_k = top_k
        self._top_p = top_p
        self._random_seed = random_seed

    def _forward_with_kvcache(self, input_ids : torch.Tensor, use_debug = True) -> torch.Tensor:
        if self._past_key_values is None:
            assert self._prob_history is None, f"{self._prob_history.shape}"
            # the first forward returns the prompt's logits
            outputs = self._model(input_ids)
            self._prob_history = outputs.logits
            for i in range(self._prob_history.shape[-2]):
                self._prob_history[:, i, :] = norm_logits(self._prob_history[:, i, :], self._temperature, self._top_k, self._top_p)
            self._past_key_values = outputs.past_key_values
            last_q = self._prob_history[:, -1, :]
        else:
            # return the last token's logits
            cached_len = 0
            for kv in self._past_key_values:
                k, v = kv
                cached_len = k.shape[2]

            last_input_id = input_ids[:, cached_len:]
            if last_input_id.dim() == 1:
                last_input_id = torch.unsqueeze(last_input_id, 0)

            if use_debug:
                print(f"last_input_id shape {last_input_id.shape}")
                _debug_show_kvcache(self._past_key_values)

            outputs = self._model(last_input_id, past_key_values=self._past_key_values, use_cache=True)

            not_cached_q = outputs.logits
            if not_cached_q.dim() == 2:
                not_cached_q = torch.unsqueeze(not_cached_q, 0)

            for i in range(not_cached_q.shape[-2]):
                not_cached_q[:, i, :] = norm_logits(not_cached_q[:, i, :], self._temperature, self._top_k, self._top_p)

            self._prob_history = torch.cat([self._prob_history, not_cached_q], dim=1)

            last_q = not_cached_q[:, -1, :]
            self._past_key_values = outputs.past_key_values

        return last_q


    def _generate_with_kvcache(self, prefix : torch.Tensor,
                                    gamma : int,
                                    use_debug = False) -> torch.Tensor:
        """ forward the model gamma times

        Args:
            prefix (torch.Tensor): the prefix
            gamma (int): how many times approx guesses

        Returns:
            Torch.Tensor: prefix+generated tokens
        """
        x = prefix

        for _ in range(gamma):
            q = self._forward_with_kvcache(x, use_debug)
            next_tok = sample(q, random_seed=self._random_seed)
            x = torch.cat((x, next_tok), dim=1)
        return x

    @torch.no_grad()
    def generate(self, input : torch.Tensor, gamma : int) -> torch.Tensor:
        output = self._generate_with_kvcache(input, gamma)
        return output

    @torch.no_grad()
    def rollback(self, end_pos : int):
        past_key_values_trimmed = []
        assert self._past_key_values
        for kv in self._past_key_values:
            k, v = kv
            # NOTE() the indexing is specific for bloom. This won't work for other models
            # For example llama k, v should be (batch, num_head, seq_len, hidden_dim)

            # Bloom is special one
            if isinstance(self._model, BloomForCausalLM):
                # k (batch * head, hidden_dim, seq); v (batch * head, seq, hidden_dim)
                k = k[:, :, :end_pos]
                v = v[:, :end_pos, :]
                kv_trimmed = (k, v)
                past_key_values_trimmed.append(kv_trimmed)
            else:
                # k, v (batch, head, seq, hidden_dim)
                k = k[:, :, :end_pos, :]
                v = v[:, :, :end_pos, :]
                kv_trimmed = (k, v)
                past_key_values_trimmed.append(kv_trimmed)

        self._past_key_values = past_key_values_trimmed
        self._prob_history = self._prob_history[:, :end_pos, :]


@torch.no_grad()
def speculative_sampling(prefix : torch.Tensor, approx_model : torch.nn.Module, target_model : torch.nn.Module,
                         max_len : int , gamma : int = 4,
                         temperature : float = 1, top_k : int = 0, top_p : float = 0, verbose : bool = False, random_seed : int = None) -> torch.Tensor:
    """
    Google version Speculative Sampling.
    https://arxiv.org/pdf/2211.17192.pdf

    Adapted with KV Cache Optimization.
    """
    seq_len = prefix.shape[1]
    T = seq_len + max_len

    assert prefix.shape[0] == 1, "input batch size must be 1"

    assert approx_model.device == target_model.device

    device = target_model.device

    if verbose:
        global DECODER

    approx_model_cache = KVCacheModel(approx_model, temperature, top_k, top_p, random_seed)
    target_model_cache = KVCacheModel(target_model, temperature, top_k, top_p, random_seed)

    torch.manual_seed(123)
    with tqdm(total=T, desc="speculative sampling") as pbar:
        while prefix.shape[1] < T:
            # q = M_q[prefix + x_0, x_1, .., x_(gamma-2)]
            prefix_len = prefix.shape[1]

            x = approx_model_cache.generate(prefix, gamma)
            _ = target_model_cache.generate(x, 1)

            n = prefix_len + gamma - 1
            for i in range(gamma):
                r = torch.rand(1, device = device)
                j = x[:, prefix_len + i]

                if r > (target_model_cache._prob_history[:, prefix_len + i - 1, j]) / (approx_model_cache._prob_history[:, prefix_len + i - 1, j]):
                    # reject
                    n = prefix_len + i - 1
                    break

                if verbose:
                    print(f"approx guess accepted {j[0]}: \033[31m{DECODER.decode(torch.tensor([j]))}\033[0m")

            # print(f"n : {n}, i : {i}, prefix_len + gamma - 1: {prefix_len + gamma - 1}")
            assert n >= prefix_len - 1, f"n {n}, prefix_len {prefix_len}"
            prefix = x[:, :n + 1]

            approx_model_cache.rollback(n+1)

            assert approx_model_cache._prob_history.shape[-2] <= n + 1, f"approx_model prob list shape {approx_model_cache._prob_history.shape}, n {n}"

            if n < prefix_len + gamma - 1:
                # reject someone, sample from the pos n
                t = sample(max_fn(target_model_cache._prob_history[:, n, :] - approx_model_cache._prob_history[:, n, :]), random_seed=random_seed)
                if verbose:
                    print(f"target resamples at position {n}: \033[34m{DECODER.decode(t)}\033[0m")

                target_model_cache.rollback(n+1)
            else:
                # all approx model decoding accepted
                assert n == target_model_cache._prob_history.shape[1] - 1
                t = sample(target_model_cache._prob_history[:, -1, :], random_seed=random_seed)
                if verbose:
                    print(f"target samples {n}: \033[35m{DECODER.decode(t)}\033[0m")
                target_model_cache.rollback(n+2)


            prefix = torch.cat((prefix, t), dim=1)

            if not verbose:
                pbar.update(n - pbar.n)

    return prefix


def main():
    small = TinyCausalLM().eval()
    large = TinyCausalLM().eval()
    prefix = torch.tensor([[5, 6, 7]])
    return torch.compile(speculative_sampling)(prefix, small, large, 6, gamma=3)


def make():
    torch.manual_seed(0)
    small = TinyCausalLM().eval()
    large = TinyCausalLM().eval()
    prefix = torch.tensor([[5, 6, 7]])
    return speculative_sampling, [
        (prefix, small, large, 6, 3),
        (prefix, small, large, 4, 2, 1, 5, 0.9),
    ]
