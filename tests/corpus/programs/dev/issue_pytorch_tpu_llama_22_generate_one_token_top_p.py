"""LLaMA decode step compiled fullgraph: Python-float temperature branch, top-p sampling, index_copy token update.

Source: pytorch-tpu/llama#22 (https://github.com/pytorch-tpu/llama/pull/22)
Code: pytorch-tpu/llama llama/generation.py before the PR (the version whose
`temperature`/`top_p` are Python floats; the PR turns them into tensors to stop
recompiles).
Kept: `LLaMA.__init__` wrapping the bound method with
`torch.compile(self._generate_one_token, backend=..., fullgraph=True)`;
`_generate_one_token` as written (model call returning `(logits, cache_kvs)`,
`if temperature > 0:` softmax + `sample_top_p` else argmax, `reshape(-1)`,
`index_select` of the prompt mask and tokens at `cur_pos_tensor`, `torch.where`,
`tokens.index_copy(1, cur_pos_tensor, next_token)`, position tensor updates,
6-tuple return); `sample_top_p` (sort, cumsum, mask, `torch.where`, in-place
`div_`, `torch.multinomial`, `gather`); the generate loop in main().
Simplified: backend "torchxla_trace_once" -> default, XLA device/mark_step
dropped; the Transformer is a one-layer stand-in keeping the old interface
(`model(input_tokens, input_pos_tensor, output_pos_tensor, cache_kvs)` with
`index_copy` into explicit K/V caches); vocab 16, dim 8, batch 2, seq 6.
"""
import torch
from torch import nn


class Transformer(nn.Module):
    def __init__(self, vocab_size=16, dim=8, max_batch_size=2, max_seq_len=6):
        super().__init__()
        self.tok_embeddings = nn.Embedding(vocab_size, dim)
        self.wk = nn.Linear(dim, dim, bias=False)
        self.wv = nn.Linear(dim, dim, bias=False)
        self.output = nn.Linear(dim, vocab_size, bias=False)
        self.cache_kvs = [(torch.zeros(max_batch_size, max_seq_len, dim), torch.zeros(max_batch_size, max_seq_len, dim))]

    @torch.no_grad()
    def forward(self, tokens, input_indexes, output_index, cache_kvs):
        h = self.tok_embeddings(tokens)
        new_cache_kvs = []
        for cache_k, cache_v in cache_kvs:
            cache_k = cache_k.index_copy(1, input_indexes, self.wk(h))
            cache_v = cache_v.index_copy(1, input_indexes, self.wv(h))
            scores = torch.softmax(h @ cache_k.transpose(1, 2), dim=-1)
            h = h + scores @ cache_v
            new_cache_kvs.append((cache_k, cache_v))
        h = h.index_select(1, output_index - input_indexes[0]).squeeze(dim=1)
        return self.output(h).float(), new_cache_kvs


class LLaMA:
    def __init__(self, model: Transformer):
        self.model = model
        self._generate_one_token_fn = self._generate_one_token
        self._generate_one_token_fn = torch.compile(self._generate_one_token_fn, fullgraph=True)

    def _generate_one_token(self, tokens, input_tokens, input_text_mask, cur_pos_tensor,
                            input_pos_tensor, output_pos_tensor, cache_kvs, temperature, top_p):
        logits, cache_kvs = self.model(input_tokens, input_pos_tensor, output_pos_tensor, cache_kvs)
        if temperature > 0:
            probs = torch.softmax(logits / temperature, dim=-1)
            next_token = sample_top_p(probs, top_p)
        else:
            next_token = torch.argmax(logits, dim=-1)
        next_token = next_token.reshape(-1)
        # only replace token if prompt has already been generated
        input_text_mask_tmp = input_text_mask.index_select(1, cur_pos_tensor).squeeze(dim=1)
        tokens_tmp = tokens.index_select(1, cur_pos_tensor).squeeze(dim=1)
        next_token = torch.where(
            input_text_mask_tmp, tokens_tmp, next_token
        )
        next_token = next_token.unsqueeze(1)
        tokens = tokens.index_copy(1, cur_pos_tensor, next_token)
        input_pos_tensor = input_pos_tensor[-1:] + 1
        cur_pos_tensor = cur_pos_tensor + 1
        output_pos_tensor = cur_pos_tensor - 1
        input_tokens = tokens.index_select(1, input_pos_tensor)

        return tokens, input_tokens, cur_pos_tensor, input_pos_tensor, output_pos_tensor, cache_kvs

    def generate(self, tokens, input_text_mask, min_prompt_size, total_len, temperature=0.8, top_p=0.95):
        cache_kvs = self.model.cache_kvs
        cur_pos_tensor = torch.tensor([min_prompt_size])
        input_pos_tensor = torch.arange(0, min_prompt_size)
        output_pos_tensor = cur_pos_tensor - 1
        input_tokens = tokens.index_select(1, input_pos_tensor)
        for _ in range(min_prompt_size, total_len):
            tokens, input_tokens, cur_pos_tensor, input_pos_tensor, output_pos_tensor, cache_kvs \
                = self._generate_one_token_fn(
                    tokens, input_tokens, input_text_mask, cur_pos_tensor,
                    input_pos_tensor, output_pos_tensor, cache_kvs, temperature, top_p
                )
        self.model.cache_kvs = cache_kvs
        return tokens


def sample_top_p(probs, p):
    probs_sort, probs_idx = torch.sort(probs, dim=-1, descending=True)
    probs_sum = torch.cumsum(probs_sort, dim=-1)
    mask = probs_sum - probs_sort > p
    probs_sort = torch.where(mask, 0.0, probs_sort)
    probs_sort.div_(probs_sort.sum(dim=-1, keepdim=True))
    next_token = torch.multinomial(probs_sort, num_samples=1)
    next_token = torch.gather(probs_idx, -1, next_token)
    return next_token


def _inputs():
    tokens = torch.tensor([[1, 5, 7, 0, 0, 0], [1, 3, 0, 0, 0, 0]])
    input_text_mask = tokens != 0
    cur_pos_tensor = torch.tensor([2])
    input_pos_tensor = torch.arange(0, 2)
    output_pos_tensor = cur_pos_tensor - 1
    input_tokens = tokens.index_select(1, input_pos_tensor)
    cache_kvs = [(torch.zeros(2, 6, 8), torch.zeros(2, 6, 8))]
    return tokens, input_tokens, input_text_mask, cur_pos_tensor, input_pos_tensor, output_pos_tensor, cache_kvs


def make():
    torch.manual_seed(0)
    llama = LLaMA(Transformer())
    return llama._generate_one_token, [(*_inputs(), 0.8, 0.95), (*_inputs(), 0.0, 0.95)]
