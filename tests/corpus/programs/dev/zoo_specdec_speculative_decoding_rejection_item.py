"""Speculative-Decoding `speculative_decoding`: gamma drafter steps, one target pass, rejection sampling via a list comprehension comparing `r[i] > p[i][..., tok] / q[i][..., tok]` inside `min(...)`, `torch.any(drafts == end_token_id)` with `positions[0].item()` / `positions.item()`, cache pruning, `max_fn` resampling and `t.item() == end_token_id` to stop; returns the sequence and the acceptance rate.

Source: romsto/Speculative-Decoding@0b1fa5210dd8f2b2ca0d130aaff35b9072219852:sampling/speculative_decoding.py:1-230
Also: utils/sampling.py@9a6fb05 (norm_logits, sample, top_k_top_p_filter), utils/generation.py@9a6fb05
(forward, is_decoder_only, decoder_start_token), utils/caching.py (the tuple-cache pruning).
Kept: speculative_decoding and max_fn verbatim (debug printing included), the helpers verbatim.
Simplified: transformers' T5ForConditionalGeneration is a local marker class; drafter and target
are tiny decoder-only stand-ins (vocabulary 10) that recompute from the full prefix and return
no cache (past_key_values None, so pruning returns None); termcolor.colored and
token_ids_to_string (utils/printing.py) runs on a tiny tokenizer stand-in whose
convert_ids_to_tokens does what transformers' does (`int(index)` per id).
"""
from typing import Tuple, Optional

import torch
from torch import Tensor, tensor, cat
from torch.nn import Module
from torch.nn import functional as F


# ---- transformers stand-ins ----
class DynamicCache:
    def __init__(self):
        self.key_cache = []
        self.value_cache = []


class CausalLMOutputWithPast:
    def __init__(self, logits, past_key_values):
        self.logits = logits
        self.past_key_values = past_key_values


class TinyConfig:
    vocab_size = 10
    hidden_size = 8
    max_position_embeddings = 16


class TinyCausalLM(torch.nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.embed_tokens = torch.nn.Embedding(config.vocab_size, config.hidden_size)
        self.embed_positions = torch.nn.Embedding(config.max_position_embeddings, config.hidden_size)
        self.mlp = torch.nn.Linear(config.hidden_size, config.hidden_size)
        self.lm_head = torch.nn.Linear(config.hidden_size, config.vocab_size, bias=False)

    @property
    def device(self):
        return next(self.parameters()).device

    def forward(self, input_ids, past_key_values=None, use_cache=False):
        pos = torch.arange(input_ids.shape[1], device=input_ids.device)
        h = self.embed_tokens(input_ids) + self.embed_positions(pos)[None]
        h = h.cumsum(1) / (pos[None, :, None] + 1)
        h = h + torch.tanh(self.mlp(h))
        return CausalLMOutputWithPast(self.lm_head(h), past_key_values if use_cache else None)


class T5ForConditionalGeneration(torch.nn.Module):
    pass


# ---- termcolor / utils/printing.py stand-ins ----
def colored(text, color=None, on_color=None):
    return str(text)


class TinyTokenizer:
    """Stand-in for a transformers tokenizer's convert_ids_to_tokens (which does int(index) per id)."""

    def __init__(self, vocab):
        self._vocab = vocab

    def convert_ids_to_tokens(self, ids, skip_special_tokens=False):
        if isinstance(ids, int):
            return self._vocab[ids]
        tokens = []
        for index in ids:
            index = int(index)
            tokens.append(self._vocab[index])
        return tokens


def token_ids_to_string(token_ids, tokenizer):
    strings = tokenizer.convert_ids_to_tokens(token_ids)
    return " ".join(strings)


# ---- utils/sampling.py ----
def topp(logits: Tensor, top_p: float) -> Tensor:
    sorted_logits, sorted_indices = torch.sort(logits, descending=True)
    cumulative_probs = torch.cumsum(F.softmax(sorted_logits, dim=-1), dim=-1)
    to_keep = cumulative_probs <= top_p
    indices_to_keep = sorted_indices[to_keep]
    mask = torch.ones_like(logits, dtype=torch.bool)
    mask[indices_to_keep] = False
    logits[mask] = -1e20
    return logits


def top_k_top_p_filter(logits: Tensor, top_k: int = 0, top_p: float = 0.0) -> Tensor:
    if top_k > 0:
        top_k_tokens = torch.topk(logits, top_k, dim=-1).values
        min_logits = torch.min(top_k_tokens)
        logits = torch.where(
            logits < min_logits, torch.ones_like(logits) * -1e20, logits
        )
    if top_p > 0.0:
        logits = topp(logits, top_p)
    return logits


def norm_logits(
    logits: Tensor, temperature: float, top_k: float, top_p: float
) -> Tensor:
    if temperature != 1.0:
        logits = logits / temperature
    logits = top_k_top_p_filter(logits, top_k=top_k, top_p=top_p)
    probs = F.softmax(logits, dim=-1)
    return probs


def sample(logits: Tensor, num_samples: int = 1) -> Tensor:
    idx_next = torch.multinomial(logits, num_samples=num_samples)
    return idx_next


# ---- utils/generation.py ----
def forward(
    model: Module,
    input_ids: Tensor,
    decoded_ids: Optional[Tensor] = None,
    cache=None,
    use_cache: bool = False,
    decoder_only: bool = None,
):
    if decoder_only is None:
        decoder_only = is_decoder_only(model)

    if decoder_only:
        if decoded_ids is not None:
            input_ids = cat((input_ids, decoded_ids), dim=1)
        return model(input_ids, past_key_values=cache, use_cache=use_cache)
    else:
        if decoded_ids is None:
            decoded_ids = tensor([[model.config.decoder_start_token_id]]).to(
                input_ids.device
            )
        return model(
            input_ids,
            decoder_input_ids=decoded_ids,
            past_key_values=cache,
            use_cache=use_cache,
        )


def is_decoder_only(model: Module):
    return not hasattr(model, "encoder") or (
        not hasattr(model, "encoder") and not hasattr(model, "decoder")
    )


def decoder_start_token(model: Module, device: str = None):
    if device is None:
        device = model.device

    start_token_id = None
    if hasattr(model, "config") and hasattr(model.config, "decoder_start_token_id"):
        start_token_id = model.config.decoder_start_token_id

    return (
        tensor([[start_token_id]], dtype=torch.int64).to(device)
        if start_token_id is not None
        else tensor([[]], dtype=torch.int64).to(device)
    )


# ---- utils/caching.py ----
def prune_cache_general(cache, num_tokens_to_discard: int):
    if cache is None:
        return None

    new_cache = []
    for layer_cache in cache:
        if layer_cache is None:
            new_cache.append(None)
            continue

        layer = []
        for i in range(len(layer_cache)):
            tensor = layer_cache[i]
            new_tensor = tensor[:, :, :-num_tokens_to_discard, :]
            layer.append(new_tensor)
        new_cache.append(tuple(layer))

    return tuple(new_cache)


prune_cache_t5 = prune_cache_general


# ---- sampling/speculative_decoding.py ----
def max_fn(x: Tensor) -> Tensor:
    """
    Max function.
        x: input tensor.
    Returns:
        tensor norm(max(0, x)).
    """
    x_max = torch.where(x > 0, x, torch.zeros_like(x))
    x_max_sum = torch.sum(x_max, dim=-1, keepdim=True)
    return x_max / x_max_sum


@torch.no_grad()
def speculative_decoding(
    input_ids: Tensor,
    drafter: Module,
    target: Module,
    min_len: int = 20,
    gamma: int = 5,
    temperature: float = 1,
    top_k: int = 0,
    top_p: float = 0,
    skip_sample_adjustment: bool = False,
    end_token_id: int = 1,
    use_cache: bool = True,
    target_first:bool = True,
    debug: bool = False,
    debug_tokenizer=None,
) -> Tuple[Tensor, float]:
    """
    Implementation of Speculative Decoding. (https://arxiv.org/pdf/2211.17192.pdf)
    Sampling method depends on the top_k and top_p parameters. If top_k = 0, then greedy decoding is used. Otherwise, multinomial sampling is used.

    Returns:
        generated sequence, acceptance rate (number of accepted drafts divided by the number of total drafts).
    """

    drafter_cache = None
    target_cache = None
    prune_cache_drafter = prune_cache_general if not isinstance(drafter, T5ForConditionalGeneration) else prune_cache_t5
    prune_cache_target = prune_cache_general if not isinstance(target, T5ForConditionalGeneration) else prune_cache_t5

    seq_len = 0
    total_accept = 0
    number_of_trials = 0
    device = input_ids.device

    target_decoder_only = is_decoder_only(target)
    drafter_decoder_only = is_decoder_only(drafter)

    target_decoder_start_id = decoder_start_token(target, device)
    drafter_decoder_start_id = decoder_start_token(drafter, device)

    decoded_input_ids = torch.tensor([[]], dtype=torch.int64).to(device)

    if target_first:
        # run the target model before the speculative algorithm. Allows to prefill the kvcache and get a first token.
        Mp = forward(
            target,
            input_ids=input_ids,
            decoded_ids=torch.cat((target_decoder_start_id, decoded_input_ids), dim=-1),
            cache=target_cache,
            use_cache=use_cache,
            decoder_only=target_decoder_only,
        )
        target_cache = Mp.past_key_values
        p_p = norm_logits(Mp.logits[..., -1, :], temperature, top_k, top_p)
        t = sample(p_p)
        decoded_input_ids = torch.cat((decoded_input_ids, t), dim=-1)
        seq_len += 1
        if debug:
            print(f"{colored('Initiale Step', on_color='on_dark_grey', color='white')} 1 token:")
            print(colored(token_ids_to_string(t[0], debug_tokenizer), 'blue'))

    while seq_len < min_len:
        drafts_probs = []
        drafter_decoded_input_ids = torch.tensor([[]], dtype=torch.int64).to(device)

        # generate gamma drafts
        for _ in range(gamma):
            Mq = forward(
                drafter,
                input_ids=input_ids,
                decoded_ids=torch.cat(
                    (
                        drafter_decoder_start_id,
                        decoded_input_ids,
                        drafter_decoded_input_ids,
                    ),
                    dim=-1,
                ),
                cache=drafter_cache,
                use_cache=use_cache,
                decoder_only=drafter_decoder_only,
            )
            draft_logits = Mq.logits[..., -1, :]
            drafter_cache = Mq.past_key_values
            draft_logits = norm_logits(draft_logits, temperature, top_k, top_p)
            xi = sample(draft_logits)  # x_i ~ q_i(x)
            drafts_probs.append(draft_logits)  # q_i(x)
            drafter_decoded_input_ids = torch.cat(
                (drafter_decoded_input_ids, xi), dim=-1
            )
            number_of_trials += 1

        # run target model on drafts and get logits of the previous tokens plus one more token
        Mp = forward(
            target,
            input_ids=input_ids,
            decoded_ids=torch.cat(
                (target_decoder_start_id, decoded_input_ids, drafter_decoded_input_ids),
                dim=-1,
            ),
            cache=target_cache,
            use_cache=use_cache,
            decoder_only=target_decoder_only,
        )
        target_cache = Mp.past_key_values
        # apply normalization
        vocabulary_limit = drafts_probs[0].shape[1]

        p = [
            norm_logits(
                Mp.logits[..., -gamma - 1 + i, :vocabulary_limit],
                temperature,
                top_k,
                top_p,
            )
            for i in range(gamma)
        ]

        # compute the last accepted draft position (rejection sampling)
        r = torch.rand(gamma, device=device)
        # n = \min(\left\{i - 1 \, \middle| \, 1 \leq i \leq \gamma, \, r_i > \frac{p_i(x)}{q_i(x)} \right\} \cup \{\gamma\})
        n = min(
            [
                i
                for i in range(gamma)
                if r[i] > p[i][..., drafter_decoded_input_ids[0, i]] / drafts_probs[i][..., drafter_decoded_input_ids[0, i]]
            ]
            + [gamma]
        )

        # if the end token is in drafts(0, n), stop and return the sequence with the drafts until end token
        if n == gamma:
            drafts = drafter_decoded_input_ids[0]
        else:
            drafts = drafter_decoded_input_ids[0, : -gamma + n]
        if torch.any(drafts == end_token_id):
            positions = torch.where(drafts == end_token_id)[0]
            if positions.shape[0] > 1:
                position = positions[0].item()
            else:
                position = positions.item()
            total_accept += position + 1
            decoded_input_ids = torch.cat(
                (
                    drafter_decoder_start_id,
                    decoded_input_ids,
                    drafts[:position].unsqueeze(0),
                ),
                dim=-1,
            )
            if debug:
                print(colored(f"End token found at position {position}", "red"))
            return decoded_input_ids, total_accept / number_of_trials

        # prune the cache
        if use_cache:
            drafter_cache = prune_cache_drafter(drafter_cache, gamma - n)
            target_cache = prune_cache_target(target_cache, gamma - n + 1)

        total_accept += n

        # adjut the distribution from Mp
        p_p = norm_logits(
            Mp.logits[..., -(gamma - n + 1), :vocabulary_limit], temperature, top_k, top_p
        )
        if n < gamma and not skip_sample_adjustment:
            p_p = max_fn(p[n] - drafts_probs[n])

        # sample from the adjusted distribution
        t = sample(p_p)

        # cat seq with n drafts and the sampled token
        generated = torch.cat((drafts.unsqueeze(0), t), dim=-1)
        if debug:
            print(f"{colored('Speculative Step', on_color='on_dark_grey', color='white')} {n} draft{'s' if n > 1 else ''} + 1 token:")
            print(token_ids_to_string(decoded_input_ids[0], debug_tokenizer), end=' ')
            print(colored(token_ids_to_string(drafts, debug_tokenizer), 'green'), end=(' ' if n > 0 else ''))
            print(colored(token_ids_to_string(drafter_decoded_input_ids[0, n:], debug_tokenizer), 'red'), end=(' ' if n < gamma else ''))
            print(colored(token_ids_to_string(t[0], debug_tokenizer), 'blue'))

        decoded_input_ids = torch.cat((decoded_input_ids, generated), dim=-1)
        seq_len = decoded_input_ids.shape[1]

        # stop if the sampled token is the end token
        if t.item() == end_token_id:
            break

    return decoded_input_ids, total_accept / number_of_trials


spec_decode = torch.compile(speculative_decoding, dynamic=True)


def make():
    torch.manual_seed(0)
    drafter = TinyCausalLM(TinyConfig()).eval()
    target = TinyCausalLM(TinyConfig()).eval()
    with torch.no_grad():
        target.lm_head.weight.copy_(drafter.lm_head.weight + 0.3 * torch.randn_like(drafter.lm_head.weight))
    prompt = torch.tensor([[2, 5, 7]])
    tokenizer = TinyTokenizer([f"tok{i}" for i in range(10)])
    return speculative_decoding, [
        (prompt, drafter, target, 8, 3, 1.0, 0, 0.0, False, 1, False, True, True, tokenizer),
        (prompt, drafter, target, 6, 2, 0.7, 4, 0.0, False, 9, True, False, False),
        (prompt, drafter, target, 6, 3, 1.0, 0, 0.0, True, 3, True, True, False),
    ]
