"""Speculative-Decoding baseline `autoregressive_generate`: fills a `torch.full` buffer from a Python token list, loops `for curr in range(prompt_len, total_len)` calling the model on `input_ids[..., :curr]`, samples with a `LogitsProcessor` object, writes `input_ids[0, curr] = x`, stops on `if torch.isin(x, stop_tokens)`, and returns `.tolist()` of the generated slice.

Source: romsto/Speculative-Decoding@3e6b2022f42407e6b9bbff1fefcf76d703aeab74:sampling/base_decoding.py:1-70
Also: utils/logits_processor.py@61b191b5bf4d3496c1cfe469d0e0d458ad2b6edf:1-45 (LogitsProcessor,
GreedyProcessor, MultinomialProcessor), utils/printing.py (end_token_found).
Kept: autoregressive_generate verbatim (the `hasattr(model.config, ...)` max-length plumbing,
`model.device`, the `eos_tokens_id` int-or-list handling), the processors verbatim.
Simplified: transformers' DynamicCache and the HF causal LM are replaced by a tiny stand-in
(embedding + one linear + lm_head, vocabulary 10) that returns an output object with `.logits` and
`.past_key_values` (the cache is passed through unused); printing.end_token_found prints a line.
"""
import abc
from typing import List

import torch
from torch import Tensor
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


# ---- utils/printing.py ----
class printing:
    @staticmethod
    def end_token_found(location: int):
        print(f"End token found at position {location}")


# ---- utils/logits_processor.py ----
class LogitsProcessor(abc.ABC):
    """Logits processors for sampling."""

    def __init__(self, temperature: float):
        self.temperature = temperature

    def __call__(self, logits: Tensor) -> Tensor:
        proc = self._process(logits)
        return F.softmax(proc / self.temperature, dim=-1)

    @abc.abstractmethod
    def _process(self, logits: Tensor) -> Tensor:
        pass

    @abc.abstractmethod
    def sample(self, probs: Tensor) -> Tensor:
        pass


class GreedyProcessor(LogitsProcessor):
    """Greedy: Most probable token."""

    def __init__(self, temperature: float):
        super().__init__(temperature)

    def _process(self, logits: Tensor) -> Tensor:
        return logits

    def sample(self, probs: Tensor) -> Tensor:
        return torch.argmax(probs, dim=-1).unsqueeze(-1)


class MultinomialProcessor(LogitsProcessor):
    """Multinomial: Random sampling."""

    def __init__(self, temperature: float):
        super().__init__(temperature)

    def _process(self, logits: Tensor) -> Tensor:
        return logits

    def sample(self, probs: Tensor) -> Tensor:
        return torch.multinomial(probs, num_samples=1)


# ---- sampling/base_decoding.py ----
@torch.no_grad()
def autoregressive_generate(
    inputs: List[int],
    model: Module,
    max_gen_len: int = 40,
    logits_processor: LogitsProcessor = GreedyProcessor(temperature=1),
    eos_tokens_id: int | List[int] = 1,
    pad_token_id: int = 0,
    use_cache: bool = True,
    debug: bool = False,
):
    """
    Generate text sequence autoregressively based on the input sequence.

    Args:
        inputs (List[int]): input sequence of batch size 1.
        model (Module): model to use for inference.
        max_gen_len (int): maximum length of the generated sequence.
        logits_processor (LogitsProcessor): logits processor for sampling.
        eos_token_id (int): end token id.
        pad_token_id (int): pad token id.
        use_cache (bool): whether to use cache.

    Returns:
        List[int]: generated sequence.

    Note:
        This generation methods only works for decoder-only models.
    """
    cache = DynamicCache()
    prompt_len = len(inputs)
    # prepare input tensor
    max_seq_length = model.config.max_position_embeddings if hasattr(model.config, 'max_position_embeddings') else (model.config.max_context_length if hasattr(model.config, 'max_context_length') else 1024)
    total_len = min(max_seq_length, prompt_len + max_gen_len)
    input_ids = torch.full(
        (1, total_len), pad_token_id, dtype=torch.long, device=model.device
    )
    input_ids[0, :prompt_len] = torch.tensor(
        inputs, dtype=torch.long, device=model.device
    )

    list_tokens_id = (
        eos_tokens_id if isinstance(eos_tokens_id, list) else [eos_tokens_id]
    )
    stop_tokens = torch.tensor(list_tokens_id, dtype=torch.long, device=model.device)

    for curr in range(prompt_len, total_len):
        o = model(input_ids[..., :curr], past_key_values=cache, use_cache=use_cache)
        logits = o.logits[..., -1, :]  # [1, vocab_size]
        probs = logits_processor(logits)  # [1, vocab_size]
        x = logits_processor.sample(probs)  # [1, 1]
        input_ids[0, curr] = x
        cache = o.past_key_values

        # check for end token
        if torch.isin(x, stop_tokens):
            if debug:
                printing.end_token_found(curr)
            break

    return input_ids[0, prompt_len : curr + 1].tolist()


generate = torch.compile(autoregressive_generate)


def make():
    torch.manual_seed(0)
    model = TinyCausalLM(TinyConfig()).eval()
    return autoregressive_generate, [
        ([2, 5, 7], model, 4, GreedyProcessor(temperature=1), 1),
        ([3, 4], model, 20, MultinomialProcessor(temperature=0.8), [1, 6, 8], 0, True, True),
    ]
