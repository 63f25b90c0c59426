"""mamba_ssm decode loop: `while not should_stop(...)` tests `(current_token == eos_token_id).all()` each step, and min-p sampling reads `logits_top[..., 0].item()`.

Source: state-spaces/mamba@e9594ce1c732d97440f0332fdc43170a2294dbfa:mamba_ssm/utils/generation.py:17-118,120-262
Kept: InferenceParams, the logits filters (min_p, top_k, top_p, repetition
penalty), sample() with its greedy short-circuit, top-k/top-p and min-p
paths, decode()'s get_logits/sample_tokens/should_stop closures, the
while loop with output_scores and repetition penalty, GenerationMixin.generate.
Simplified: no CUDA-graph cache (cg=False), timing events or streamer;
GenerateDecoderOnlyOutput is a small dataclass; decode itself is compiled; the LM is an embedding, a
gated recurrent state kept in inference_params.key_value_memory_dict and a
tied head whose bias favours token 2; vocab 8, d_model 8.
"""
from collections import namedtuple
from dataclasses import dataclass, field
from typing import Optional

import torch
from torch import Tensor, nn


@dataclass
class InferenceParams:
    """Inference parameters that are passed to the main model in order
    to efficienly calculate and store the context during inference."""

    max_seqlen: int
    max_batch_size: int
    seqlen_offset: int = 0
    batch_size_offset: int = 0
    key_value_memory_dict: dict = field(default_factory=dict)
    lengths_per_sample: Optional[Tensor] = None

    def reset(self, max_seqlen, max_batch_size):
        self.max_seqlen = max_seqlen
        self.max_batch_size = max_batch_size
        self.seqlen_offset = 0
        if self.lengths_per_sample is not None:
            self.lengths_per_sample.zero_()


@dataclass
class GenerateDecoderOnlyOutput:
    sequences: Tensor = None
    scores: Optional[tuple] = None


def modify_logits_for_min_p_filtering(logits, min_p):
    """Set the logits for none min_p values to -inf. Done in-place."""
    if min_p <= 0.0 or min_p >= 1.0:
        return
    indices_to_remove = logits < min_p
    logits.masked_fill_(indices_to_remove, float("-Inf"))


def modify_logits_for_top_p_filtering(logits, top_p):
    """Set the logits for none top-p values to -inf. Done in-place."""
    if top_p <= 0.0 or top_p >= 1.0:
        return
    # First sort and calculate cumulative sum of probabilities.
    sorted_logits, sorted_indices = torch.sort(logits, descending=False)
    cumulative_probs = sorted_logits.softmax(dim=-1).cumsum(dim=-1)
    # Remove tokens with cumulative top_p above the threshold (token with 0 are kept)
    sorted_indices_to_remove = cumulative_probs <= (1 - top_p)
    # scatter sorted tensors to original indexing
    indices_to_remove = sorted_indices_to_remove.scatter(
        1, sorted_indices, sorted_indices_to_remove
    )
    logits.masked_fill_(indices_to_remove, float("-inf"))


def modify_logit_for_repetition_penalty(logits, prev_output_tokens, repetition_penalty=1.0):
    """Apply repetition penalty. See https://arxiv.org/abs/1909.05858"""
    if repetition_penalty == 1.0:
        return logits
    score = torch.gather(logits, 1, prev_output_tokens)
    # if score < 0 then repetition penalty has to be multiplied to reduce the previous token probability
    score = torch.where(score < 0, score * repetition_penalty, score / repetition_penalty)
    logits.scatter_(1, prev_output_tokens, score)
    return logits


def sample(logits, top_k=1, top_p=0.0, min_p=0.0, temperature=1.0):
    """Sample from top-k logits."""
    if top_k == 1:  # Short-circuit for greedy decoding
        return logits.argmax(dim=-1)
    else:
        if top_p > 0.0:
            assert top_p <= 1.0, "top-p should be in (0, 1]."
        if top_k > 0:
            top_k = min(top_k, logits.size(-1))  # Safety check
            logits_top, indices = torch.topk(logits, top_k, dim=-1)
            if temperature != 1.0:
                logits_top /= temperature
            modify_logits_for_top_p_filtering(logits_top, top_p)
            return indices[
                torch.arange(indices.shape[0], device=indices.device),
                torch.multinomial(torch.softmax(logits_top, dim=-1), num_samples=1).squeeze(dim=-1),
            ]
        else:
            if min_p > 0.0:
                logits_top = logits.clone()
                max_prob = logits_top[..., 0].item()
                min_prob = max_prob * min_p
                modify_logits_for_min_p_filtering(logits_top, min_prob)
                if temperature != 1.0:
                    logits_top /= temperature
                return torch.multinomial(torch.softmax(logits_top, dim=-1), num_samples=1).squeeze(dim=-1)
            # Clone so that when we modify for top_p we don't change the original logits
            logits_top = logits / temperature if temperature != 1.0 else logits.clone()
            modify_logits_for_top_p_filtering(logits_top, top_p)
            return torch.multinomial(torch.softmax(logits_top, dim=-1), num_samples=1).squeeze(
                dim=-1
            )


@torch.inference_mode()
def decode(
    input_ids,
    model,
    max_length,
    top_k=1,
    top_p=0.0,
    min_p=0.0,
    temperature=1.0,
    repetition_penalty=1.0,
    eos_token_id=None,
    teacher_outputs=None,
    vocab_size=None,
    output_scores=False,
):
    batch_size, seqlen_og = input_ids.shape
    teacher_output_len = teacher_outputs.shape[1] if teacher_outputs is not None else 0
    inference_params = InferenceParams(max_seqlen=max_length, max_batch_size=batch_size)

    def get_logits(input_ids, inference_params):
        decoding = inference_params.seqlen_offset > 0
        if decoding:
            position_ids = torch.full(
                (batch_size, 1),
                inference_params.seqlen_offset,
                dtype=torch.long,
                device=input_ids.device,
            )
        else:
            position_ids = None
        logits = model(
            input_ids,
            position_ids=position_ids,
            inference_params=inference_params,
            num_last_tokens=1,
        ).logits.squeeze(dim=1)
        return logits[..., :vocab_size] if vocab_size is not None else logits

    def sample_tokens(logits, inference_params):
        if teacher_outputs is None or teacher_output_len <= inference_params.seqlen_offset:
            token = sample(logits, top_k=top_k, top_p=top_p, min_p=min_p, temperature=temperature)
        else:
            token = teacher_outputs[:, inference_params.seqlen_offset]
        # return rearrange(token, "b -> b 1")
        return token.unsqueeze(1)

    def should_stop(current_token, inference_params):
        if inference_params.seqlen_offset == 0:
            return False
        if eos_token_id is not None and (current_token == eos_token_id).all():
            return True
        if inference_params.seqlen_offset >= max_length - 1:
            return True
        return False

    scores, sequences = [], [input_ids]
    sequences_cat = input_ids
    while not should_stop(sequences[-1], inference_params):
        logits = get_logits(sequences[-1], inference_params)
        if output_scores:
            scores.append(logits.clone())
        inference_params.seqlen_offset += sequences[-1].shape[1]
        if repetition_penalty == 1.0:
            sampled_tokens = sample_tokens(logits, inference_params)
        else:
            logits = modify_logit_for_repetition_penalty(
                logits, sequences_cat, repetition_penalty
            )
            sampled_tokens = sample_tokens(logits, inference_params)
            sequences_cat = torch.cat([sequences_cat, sampled_tokens], dim=1)
        sequences.append(sampled_tokens)
    return GenerateDecoderOnlyOutput(sequences=torch.cat(sequences, dim=1), scores=tuple(scores))


class GenerationMixin:
    def allocate_inference_cache(self, batch_size, max_seqlen, dtype=None, **kwargs):
        raise NotImplementedError

    def generate(
        self,
        input_ids,
        max_length,
        top_k=1,
        top_p=0.0,
        min_p=0.0,
        temperature=1.0,
        return_dict_in_generate=False,
        output_scores=False,
        **kwargs,
    ):
        output = decode(
            input_ids, self, max_length, top_k=top_k, top_p=top_p, min_p=min_p, temperature=temperature, output_scores=output_scores, **kwargs
        )
        if not output_scores:
            output.scores = None
        return output if return_dict_in_generate else output.sequences


CausalLMOutput = namedtuple("CausalLMOutput", ["logits"])


class RecurrentMixer(nn.Module):
    """A gated recurrence whose state lives in inference_params, like Mamba's ssm_state."""

    def __init__(self, d_model, layer_idx):
        super().__init__()
        self.layer_idx = layer_idx
        self.in_proj = nn.Linear(d_model, 2 * d_model)
        self.out_proj = nn.Linear(d_model, d_model)

    def _get_states_from_cache(self, inference_params, batch_size):
        if self.layer_idx not in inference_params.key_value_memory_dict:
            state = torch.zeros(batch_size, self.out_proj.in_features)
            inference_params.key_value_memory_dict[self.layer_idx] = state
        return inference_params.key_value_memory_dict[self.layer_idx]

    def forward(self, hidden_states, inference_params=None):
        x, gate = self.in_proj(hidden_states).chunk(2, dim=-1)
        decay = torch.sigmoid(gate)
        state = hidden_states.new_zeros(hidden_states.shape[0], x.shape[-1])
        if inference_params is not None:
            state = self._get_states_from_cache(inference_params, hidden_states.shape[0])
        outs = []
        for t in range(x.shape[1]):
            state = decay[:, t] * state + (1 - decay[:, t]) * x[:, t]
            outs.append(state)
        if inference_params is not None:
            inference_params.key_value_memory_dict[self.layer_idx] = state
        return self.out_proj(torch.stack(outs, dim=1))


class MambaLMHeadModel(nn.Module, GenerationMixin):
    def __init__(self, vocab_size=8, d_model=8, n_layer=2):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, d_model)
        self.layers = nn.ModuleList([RecurrentMixer(d_model, i) for i in range(n_layer)])
        self.norm_f = nn.LayerNorm(d_model)
        self.lm_head = nn.Linear(d_model, vocab_size, bias=False)
        self.lm_head.weight = self.embedding.weight
        self.register_buffer("eos_bias", torch.zeros(vocab_size))
        self.eos_bias[2] = 3.0

    def forward(self, input_ids, position_ids=None, inference_params=None, num_last_tokens=0):
        hidden_states = self.embedding(input_ids)
        for layer in self.layers:
            hidden_states = hidden_states + layer(hidden_states, inference_params=inference_params)
        hidden_states = self.norm_f(hidden_states)
        if num_last_tokens > 0:
            hidden_states = hidden_states[:, -num_last_tokens:]
        lm_logits = self.lm_head(hidden_states) + self.eos_bias
        return CausalLMOutput(logits=lm_logits)


fast_decode = torch.compile(decode, dynamic=True)


def make():
    torch.manual_seed(0)
    lm = MambaLMHeadModel().eval()
    input_ids = torch.tensor([[1, 5, 6], [4, 3, 7]])
    return decode, [
        (input_ids, lm, 6),
        (input_ids, lm, 6, 1, 0.0, 0.0, 1.0, 1.0, 2),
        (input_ids[:1], lm, 5, 0, 0.0, 0.2, 0.8),
        (input_ids, lm, 5, 3, 0.9, 0.0, 1.0, 1.2, 7, None, None, True),
    ]
