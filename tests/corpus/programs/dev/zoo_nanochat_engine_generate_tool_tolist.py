"""nanochat's Engine: generation draws from a `torch.Generator` seeded per call, turns each step's sample into Python ints with `next_ids[:, 0].tolist()`, and runs a calculator tool (`eval` under a `signal.alarm` timeout) on decoded tokens.

Source: karpathy/nanochat@030de3a71a80a3cf65fe406d8cd1115bf4a550fe:nanochat/engine.py:22-300
Kept: timeout/eval_with_timeout/use_calculator, KVCache with lazy
allocation, prefill and advance, sample_next_token (greedy, top-k and full
multinomial with the generator), RowState, Engine.generate's prefill +
replicated decode cache, the per-row forced-token / python-block state
machine, and generate_batch collecting the streamed columns.
Simplified: the GPT is an embedding-driven transition table that writes
into the cache; the tokenizer maps characters and specials to 18 ids;
COMPUTE_DTYPE is float32.
"""
import signal
import warnings
from collections import deque
from contextlib import contextmanager

import torch
import torch.nn.functional as F
from torch import nn

COMPUTE_DTYPE = torch.float32


@contextmanager
def timeout(duration, formula):
    def timeout_handler(signum, frame):
        raise Exception(f"'{formula}': timed out after {duration} seconds")

    signal.signal(signal.SIGALRM, timeout_handler)
    signal.alarm(duration)
    yield
    signal.alarm(0)


def eval_with_timeout(formula, max_time=3):
    try:
        with timeout(max_time, formula):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", SyntaxWarning)
                return eval(formula)
    except Exception:
        signal.alarm(0)
        return None


def use_calculator(expr):
    """Evaluate a math expression safely."""
    expr = expr.replace(",", "")
    if any([x not in "0123456789*+-/.() " for x in expr]): # for now disallow non-numeric chars
        return None
    if "**" in expr: # for now disallow power operator, could be very expensive
        return None
    return eval_with_timeout(expr)


class KVCache:
    """Maintains the KV cache; position is tracked via cache_seqlens."""

    def __init__(self, batch_size, num_heads, seq_len, head_dim, num_layers):
        self.n_layers = num_layers
        self.batch_size = batch_size
        self.num_heads = num_heads
        self.seq_len = seq_len
        self.head_dim = head_dim
        self.kv_cache = None  # lazy init
        self.pos = 0

    def _ensure_cache(self, dtype, device):
        if self.kv_cache is None:
            self.kv_cache = torch.zeros(
                self.n_layers, 2, self.batch_size, self.seq_len, self.num_heads, self.head_dim,
                dtype=dtype, device=device
            )
            self.cache_seqlens = torch.zeros(self.batch_size, dtype=torch.int32, device=device)

    def init_cache(self, dtype, device):
        """Eagerly allocate the cache. Must be called before the first forward pass."""
        self._ensure_cache(dtype, device)

    def get_layer_cache(self, layer_idx):
        assert self.kv_cache is not None, "KV cache not initialized. Call init_cache() or prefill() first."
        return self.kv_cache[layer_idx, 0], self.kv_cache[layer_idx, 1]

    def advance(self, num_tokens):
        """Advance the cache position after all layers have processed."""
        self.pos += num_tokens
        self.cache_seqlens[:] = self.pos

    def prefill(self, other):
        """Prefill given another KV cache. Optionally expand along batch dim."""
        assert self.kv_cache is None, "Cannot prefill a non-empty KV cache"
        assert other.kv_cache is not None, "Cannot prefill with a None KV cache"
        assert self.n_layers == other.n_layers
        assert self.seq_len >= other.seq_len
        assert self.batch_size == other.batch_size or other.batch_size == 1

        dtype, device = other.kv_cache.dtype, other.kv_cache.device
        self._ensure_cache(dtype, device)
        self.kv_cache[:, :, :, :other.pos, :, :] = other.kv_cache[:, :, :, :other.pos, :, :]
        self.pos = other.pos
        self.cache_seqlens[:] = self.pos


@torch.inference_mode()
def sample_next_token(logits, rng, temperature=1.0, top_k=None):
    """Sample a single next token from given logits of shape (B, vocab_size). Returns (B, 1)."""
    assert temperature >= 0.0, "temperature must be non-negative"
    if temperature == 0.0:
        return torch.argmax(logits, dim=-1, keepdim=True)
    if top_k is not None:
        k = min(top_k, logits.size(-1))
        vals, idx = torch.topk(logits, k, dim=-1)
        vals = vals / temperature
        probs = F.softmax(vals, dim=-1)
        choice = torch.multinomial(probs, num_samples=1, generator=rng)
        return idx.gather(1, choice)
    else:
        logits = logits / temperature
        probs = F.softmax(logits, dim=-1)
        return torch.multinomial(probs, num_samples=1, generator=rng)


class RowState:
    # Per-row state tracking during generation
    def __init__(self, current_tokens=None):
        self.current_tokens = current_tokens or [] # Current token sequence for this row
        self.forced_tokens = deque() # Queue of tokens to force inject
        self.in_python_block = False # Whether we are inside a python block
        self.python_expr_tokens = [] # Tokens of the current python expression
        self.completed = False # Whether this row has completed generation


class Engine:

    def __init__(self, model, tokenizer):
        self.model = model
        self.tokenizer = tokenizer # needed for tool use

    @torch.inference_mode()
    def generate(self, tokens, num_samples=1, max_tokens=None, temperature=1.0, top_k=None, seed=42):
        """Same as generate, but does single prefill and then clones the KV cache."""
        assert isinstance(tokens, list) and isinstance(tokens[0], int), "expecting list of ints"
        device = self.model.get_device()
        rng = torch.Generator(device=device)
        rng.manual_seed(seed)

        # Get the special tokens we need to coordinate the tool use state machine
        def get_special(s): return self.tokenizer.encode_special(s)
        python_start = get_special("<|python_start|>")
        python_end = get_special("<|python_end|>")
        output_start = get_special("<|output_start|>")
        output_end = get_special("<|output_end|>")
        assistant_end = get_special("<|assistant_end|>") # if sampled, ends row
        bos = self.tokenizer.get_bos_token_id() # if sampled, ends row

        # 1) Run a batch 1 prefill of the prompt tokens
        m = self.model.config
        kv_model_kwargs = {"num_heads": m.n_kv_head, "head_dim": m.n_embd // m.n_head, "num_layers": m.n_layer}
        kv_cache_prefill = KVCache(
            batch_size=1,
            seq_len=len(tokens),
            **kv_model_kwargs,
        )
        kv_cache_prefill.init_cache(COMPUTE_DTYPE, device)
        ids = torch.tensor([tokens], dtype=torch.long, device=device)
        logits = self.model.forward(ids, kv_cache=kv_cache_prefill)
        logits = logits[:, -1, :]
        next_ids = sample_next_token(logits, rng, temperature, top_k)  # (B, 1)
        sampled_tokens = next_ids[:, 0].tolist()

        # 2) Replicate the KV cache for each sample/row
        kv_length_hint = (len(tokens) + max_tokens) if max_tokens is not None else self.model.config.sequence_len
        kv_cache_decode = KVCache(
            batch_size=num_samples,
            seq_len=kv_length_hint,
            **kv_model_kwargs,
        )
        kv_cache_decode.prefill(kv_cache_prefill)
        del kv_cache_prefill # no need to keep this memory around

        # 3) Initialize states for each sample
        row_states = [RowState(tokens.copy()) for _ in range(num_samples)]

        # 4) Main generation loop
        num_generated = 0
        first_iteration = True
        while True:
            # Stop condition: we've reached max tokens
            if max_tokens is not None and num_generated >= max_tokens:
                break
            # Stop condition: all rows are completed
            if all(state.completed for state in row_states):
                break

            # Get sampled tokens - either from prefill or from forward pass
            if first_iteration:
                # Use the tokens we already sampled from prefill
                sampled_tokens = [sampled_tokens[0]] * num_samples  # Broadcast first token to all rows
                first_iteration = False
            else:
                # Forward the model and get the next token for each row
                logits = self.model.forward(ids, kv_cache=kv_cache_decode)  # (B, T, vocab_size)
                logits = logits[:, -1, :]  # (B, vocab_size) at last time step
                next_ids = sample_next_token(logits, rng, temperature, top_k)  # (B, 1)
                sampled_tokens = next_ids[:, 0].tolist()

            # Process each row: choose the next token, update state, optional tool use
            token_column = [] # contains the next token id along each row
            token_masks = [] # contains the mask (was it sampled (1) or forced (0)?) along each row
            for i, state in enumerate(row_states):
                # Select the next token in this row
                is_forced = len(state.forced_tokens) > 0 # are there tokens waiting to be forced in deque?
                token_masks.append(0 if is_forced else 1) # mask is 0 if forced, 1 if sampled
                next_token = state.forced_tokens.popleft() if is_forced else sampled_tokens[i]
                token_column.append(next_token)
                # Update the state of this row to include the next token
                state.current_tokens.append(next_token)
                # On <|assistant_end|> or <|bos|>, mark the row as completed
                if next_token == assistant_end or next_token == bos:
                    state.completed = True
                # Handle tool logic
                if next_token == python_start:
                    state.in_python_block = True
                    state.python_expr_tokens = []
                elif next_token == python_end and state.in_python_block:
                    state.in_python_block = False
                    if state.python_expr_tokens:
                        expr = self.tokenizer.decode(state.python_expr_tokens)
                        result = use_calculator(expr)
                        if result is not None:
                            result_tokens = self.tokenizer.encode(str(result))
                            state.forced_tokens.append(output_start)
                            state.forced_tokens.extend(result_tokens)
                            state.forced_tokens.append(output_end)
                    state.python_expr_tokens = []
                elif state.in_python_block:
                    state.python_expr_tokens.append(next_token)

            # Yield the token column
            yield token_column, token_masks
            num_generated += 1
            # Prepare ids for next iteration
            ids = torch.tensor(token_column, dtype=torch.long, device=device).unsqueeze(1)

    def generate_batch(self, tokens, num_samples=1, **kwargs):
        """Non-streaming batch generation that just returns the final token sequences."""
        assistant_end = self.tokenizer.encode_special("<|assistant_end|>")
        bos = self.tokenizer.get_bos_token_id()
        results = [tokens.copy() for _ in range(num_samples)]
        masks = [[0] * len(tokens) for _ in range(num_samples)]
        completed = [False] * num_samples
        for token_column, token_masks in self.generate(tokens, num_samples, **kwargs):
            for i, (token, mask) in enumerate(zip(token_column, token_masks)):
                if not completed[i]:
                    if token == assistant_end or token == bos:
                        completed[i] = True
                    else:
                        results[i].append(token)
                        masks[i].append(mask)
            # Stop if all rows are completed
            if all(completed):
                break
        return results, masks


class CharTokenizer:
    chars = "0123456789+*"
    specials = ["<|python_start|>", "<|python_end|>", "<|output_start|>", "<|output_end|>", "<|assistant_end|>"]

    def encode_special(self, s):
        return 1 + len(self.chars) + self.specials.index(s)

    def get_bos_token_id(self):
        return 0

    def encode(self, text):
        return [1 + self.chars.index(c) for c in text]

    def decode(self, ids):
        return "".join(self.chars[i - 1] for i in ids)


class GPTConfig:
    sequence_len = 32
    vocab_size = 18
    n_layer = 1
    n_head = 1
    n_kv_head = 1
    n_embd = 4


class TransitionGPT(nn.Module):
    """Scores the token that follows each id in a fixed table, and fills the cache."""

    def __init__(self, config, table):
        super().__init__()
        self.config = config
        self.register_buffer("next_token", torch.tensor(table))
        self.kv_proj = nn.Linear(config.vocab_size, 2 * config.n_embd)

    def get_device(self):
        return self.next_token.device

    def forward(self, idx, kv_cache=None):
        B, T = idx.shape
        logits = 8.0 * F.one_hot(self.next_token[idx], self.config.vocab_size).float()
        if kv_cache is not None:
            k_cache, v_cache = kv_cache.get_layer_cache(0)
            k, v = self.kv_proj(logits).view(B, T, 1, 2, -1).unbind(3)
            pos = kv_cache.pos
            k_cache[:, pos:pos + T] = k
            v_cache[:, pos:pos + T] = v
            kv_cache.advance(T)
        return logits


# bos -> '4' -> python_start -> '2' -> '+' -> '3' -> python_end ; output_end -> assistant_end
TABLE = [5, 1, 11, 11, 14, 13, 1, 1, 1, 1, 1, 4, 1, 3, 15, 1, 17, 17]


def chat_completion(engine, tokens, num_samples=1, max_tokens=None, temperature=0.0, top_k=None):
    results, masks = engine.generate_batch(tokens, num_samples, max_tokens=max_tokens, temperature=temperature, top_k=top_k)
    return results, masks


compiled_chat_completion = torch.compile(chat_completion)


def make():
    torch.manual_seed(0)
    engine = Engine(TransitionGPT(GPTConfig(), TABLE), CharTokenizer())
    return chat_completion, [
        (engine, [0], 2, 12),
        (engine, [0, 5], 2, 4, 1.0, 3),
        (engine, [0, 5], 1, 3, 0.7),
    ]
