"""xLSTM `generate_tokens` compiled as in the repo's generation test: `@torch.no_grad` (bare), BOS prefill when `prefill_tokens is None`, `ndim == 1` reshaping, a shape assert on a caller-given output buffer, a `max_length > 0` branch, and a loop that enters `record_function(f"generate_tokens_step_{i}")`, calls the `llm_forward(last_token, state)` closure, samples greedily from `logits[:, -1:]` and writes `generated_tokens[:, i:i+1]`.

Source: NX-AI/xlstm@032a6fb8ee19a8c0db80ae6111ff4744a09414a9:xlstm/xlstm_large/generate.py:1-90
Also: tests/test_generation.py:8-83 (the llm_forward closure and
`torch.compile(generate_tokens)`), xlstm/blocks/mlstm/cell.py:13-140 and
backends.py:93-146 (mLSTMCell.step, recurrent_step_stabilized_simple),
xlstm/components/ln.py:8-68, xlstm/components/init.py:8-15.
Kept: generate.py verbatim; mLSTMCell's __init__ (without the parallel
backend_fn), step and reset_parameters, and the recurrent backend verbatim.
Simplified: xLSTMLarge (triton/native chunkwise kernels) is replaced by a
tiny LM of embedding, one mLSTMCell.step with its state in a dict, and a
linear head; vocab 32, embedding_dim 16, 2 heads; device "cpu".
"""
import math
from dataclasses import dataclass
from typing import Callable

import torch
import torch.nn.functional as F
from torch import nn
from torch.profiler import record_function


def bias_linspace_init_(param: torch.Tensor, start: float = 3.4, end: float = 6.0) -> torch.Tensor:
    """Linearly spaced bias init across dimensions."""
    assert param.dim() == 1, f"param must be 1-dimensional (typically a bias), got {param.dim()}"
    n_dims = param.shape[0]
    init_vals = torch.linspace(start, end, n_dims)
    with torch.no_grad():
        param.copy_(init_vals)
    return param


class LayerNorm(nn.Module):
    """LayerNorm but with an optional bias. PyTorch doesn't support simply bias=False."""

    def __init__(
        self,
        ndim: int = -1,
        weight: bool = True,
        bias: bool = False,
        eps: float = 1e-5,
        residual_weight: bool = True,
    ):
        super().__init__()
        self.weight = nn.Parameter(torch.zeros(ndim)) if weight else None
        self.bias = nn.Parameter(torch.zeros(ndim)) if bias else None
        self.eps = eps
        self.residual_weight = residual_weight
        self.ndim = ndim
        self.reset_parameters()

    @property
    def weight_proxy(self) -> torch.Tensor:
        if self.weight is None:
            return None
        if self.residual_weight:
            return 1.0 + self.weight
        else:
            return self.weight

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        return F.layer_norm(
            input, normalized_shape=(self.ndim,), weight=self.weight_proxy, bias=self.bias, eps=self.eps
        )

    def reset_parameters(self):
        if self.weight_proxy is not None:
            if self.residual_weight:
                nn.init.zeros_(self.weight)
            else:
                nn.init.ones_(self.weight)
        if self.bias is not None:
            nn.init.zeros_(self.bias)


class MultiHeadLayerNorm(LayerNorm):

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        assert input.dim() == 4, "Input must be 4D tensor (B, NH, S, DH)"
        B, NH, S, DH = input.shape

        gn_in_1 = input.transpose(1, 2)  # (B, S, NH, DH)
        gn_in_2 = gn_in_1.reshape(B * S, NH * DH)  # (B * S, NH * DH)
        out = F.group_norm(
            gn_in_2,
            num_groups=NH,
            weight=self.weight_proxy,
            bias=self.bias,
            eps=self.eps,
        )
        # (B * S), (NH * DH) -> (B, S, NH, DH) -> (B, NH, S, DH)
        out = out.view(B, S, NH, DH).transpose(1, 2)
        return out


def recurrent_step_stabilized_simple(
    c_state: torch.Tensor,
    n_state: torch.Tensor,
    m_state: torch.Tensor,
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    igate_preact: torch.Tensor,
    fgate_preact: torch.Tensor,
    eps: float = 1e-6,
    **kwargs,
) -> tuple[torch.Tensor, tuple[torch.Tensor, torch.Tensor]]:
    """This is a single step of the mLSTM operation in recurrent form.

    Args:
        c_state (torch.Tensor): (B, NH, DH, DH)
        n_state (torch.Tensor): (B, NH, DH, 1)
        m_state (torch.Tensor): (B, NH, 1, 1)
        q (torch.Tensor): (B, NH, 1, DH)
        k (torch.Tensor): (B, NH, 1, DH)
        v (torch.Tensor): (B, NH, 1, DH)
        igate_preact (torch.Tensor): (B, NH, 1, 1)
        fgate_preact (torch.Tensor): (B, NH, 1, 1)

    Returns:
        tuple[torch.Tensor, tuple[torch.Tensor, torch.Tensor]]:
            (hidden_state [B, NH, DH], (c_state_new [B, NH, DH, DH], n_state_new [B, NH, DH, 1]], m_state_new [B, NH, 1, 1]))
    """
    B, NH, S, DH = q.shape
    # projections
    q, k, v = q.squeeze_(2).unsqueeze(-1), k.squeeze_(2).unsqueeze(-1), v.squeeze_(2).unsqueeze(-1)  # (B, NH, DH, 1)

    # gates
    log_fg_act = torch.nn.functional.logsigmoid(fgate_preact)  # (B, NH, 1, 1)

    # update rule
    m_state_new = torch.max(log_fg_act + m_state, igate_preact)  # (B, NH, 1, 1)

    fg_act = torch.exp(log_fg_act + m_state - m_state_new)  # (B, NH, 1, 1)
    ig_act = torch.exp(igate_preact - m_state_new)  # (B, NH, 1, 1)

    k_scaled = k / math.sqrt(DH)

    c_state_new = fg_act * c_state + ig_act * (k_scaled @ v.transpose(-1, -2))  # (B, NH, DH, DH)
    n_state_new = fg_act * n_state + ig_act * k_scaled  # (B, NH, DH, 1)

    h_num = q.transpose(-1, -2) @ c_state_new  # (B, NH, 1, DH)

    qn_dotproduct = q.transpose(-1, -2) @ n_state_new  # (B, NH, 1, 1)
    max_val = torch.exp(-m_state_new)  # (B, NH, 1, 1)
    h_denom = torch.maximum(qn_dotproduct.abs(), max_val) + eps
    h = h_num / h_denom  # (B, NH, 1, DH) / (B, NH, 1, 1) = (B, NH, 1, DH)

    return h, (c_state_new, n_state_new, m_state_new)


@dataclass
class mLSTMCellConfig:
    context_length: int = -1
    embedding_dim: int = -1
    num_heads: int = -1


class mLSTMCell(nn.Module):
    config_class = mLSTMCellConfig

    def __init__(self, config: mLSTMCellConfig):
        super().__init__()
        self.config = config
        self.backend_fn_step = recurrent_step_stabilized_simple

        self.igate = nn.Linear(3 * config.embedding_dim, config.num_heads)
        self.fgate = nn.Linear(3 * config.embedding_dim, config.num_heads)

        self.outnorm = MultiHeadLayerNorm(ndim=config.embedding_dim, weight=True, bias=False)

        self.register_buffer(
            "causal_mask",
            torch.tril(torch.ones(config.context_length, config.context_length, dtype=torch.bool)),
            persistent=False,
        )

        self.reset_parameters()

    def step(
        self,
        q: torch.Tensor,
        k: torch.Tensor,
        v: torch.Tensor,
        mlstm_state: tuple[torch.Tensor, torch.Tensor, torch.Tensor] = None,
        **kwargs,
    ) -> tuple[torch.Tensor, tuple[torch.Tensor, torch.Tensor, torch.Tensor]]:
        B, S, _ = q.shape  # (B, S, H)
        assert S == 1, f"mLSTMCell.step only supports sequence length S=1, but got S={S}."

        if_gate_input = torch.cat([q, k, v], dim=-1)
        q = q.view(B, S, self.config.num_heads, -1)  # (B, S, NH, DH)
        k = k.view(B, S, self.config.num_heads, -1)  # (B, S, NH, DH)
        v = v.view(B, S, self.config.num_heads, -1)  # (B, S, NH, DH)

        _, _, NH, DH = q.shape

        q = q.transpose(1, 2)  # (B, NH, S, DH)
        k = k.transpose(1, 2)  # (B, NH, S, DH)
        v = v.transpose(1, 2)  # (B, NH, S, DH)

        # compute input and forget gate pre-activations
        igate_preact = self.igate(if_gate_input)  # (B, S, NH)
        igate_preact = igate_preact.transpose(-1, -2).unsqueeze(-1)  # (B, NH, S, 1)
        fgate_preact = self.fgate(if_gate_input)  # (B, S, NH)
        fgate_preact = fgate_preact.transpose(-1, -2).unsqueeze(-1)  # (B, NH, S, 1)

        if mlstm_state is None:
            c_state = torch.zeros(size=(B, NH, DH, DH), device=q.device, dtype=q.dtype)
            n_state = torch.zeros(size=(B, NH, DH, 1), device=q.device, dtype=q.dtype)
            m_state = torch.zeros(size=(B, NH, 1, 1), device=q.device, dtype=q.dtype)
        else:
            c_state, n_state, m_state = mlstm_state
            c_state = c_state.to(device=q.device, dtype=q.dtype)
            n_state = n_state.to(device=q.device, dtype=q.dtype)
            m_state = m_state.to(device=q.device, dtype=q.dtype)

        assert c_state.shape == (B, NH, DH, DH), f"Expected c_state shape {(B, NH, DH, DH)}, but got {c_state.shape}."
        assert n_state.shape == (B, NH, DH, 1), f"Expected n_state shape {(B, NH, DH, 1)}, but got {n_state.shape}."
        assert m_state.shape == (B, NH, 1, 1), f"Expected m_state shape {(B, NH, 1, 1)}, but got {m_state.shape}."

        h_state, mlstm_state = self.backend_fn_step(
            c_state=c_state,
            n_state=n_state,
            m_state=m_state,
            q=q,
            k=k,
            v=v,
            igate_preact=igate_preact,
            fgate_preact=fgate_preact,
        )  # (B, NH, 1 DH), ((B, NH, DH, DH), (B, NH, DH, 1), (B, NH, 1, 1))

        h_state_norm = self.outnorm(h_state)  # (B, NH, S, DH)
        h_state_norm = h_state_norm.transpose(1, 2).reshape(B, S, -1)  # (B, NH, S, DH) -> (B, S, NH, DH) -> (B, S, H)

        return h_state_norm, mlstm_state

    def reset_parameters(self):
        self.outnorm.reset_parameters()
        # forget gate initialization
        torch.nn.init.zeros_(self.fgate.weight)
        bias_linspace_init_(self.fgate.bias, start=3.0, end=6.0)
        # input gate initialization
        torch.nn.init.zeros_(self.igate.weight)
        torch.nn.init.normal_(self.igate.bias, mean=0.0, std=0.1)


LLMStateType = dict

LLMForwardFnType = Callable[
    [torch.Tensor, LLMStateType | None], tuple[torch.Tensor, LLMStateType]
]


def greedy_sampling(logits: torch.Tensor) -> torch.Tensor:
    """Takes the argmax of the logits. Actually no sampling is done here."""
    return torch.argmax(logits, dim=-1)

# Ths registry is used to map the sampling function name to the actual function
_sampling_fn_registry = {
    "greedy": greedy_sampling,
}


def get_sampling_fn(sampling_fn_name: str) -> Callable[[torch.Tensor], torch.Tensor]:
    return _sampling_fn_registry[sampling_fn_name]


@torch.no_grad
def generate_tokens(
    llm_forward: LLMForwardFnType,
    prefill_tokens: torch.Tensor | None = None,
    max_length: int = 128,
    token_sample_fn: Callable[[torch.Tensor], torch.Tensor] = greedy_sampling,
    bos_token_id: int = 0,
    state: LLMStateType | None = None,
    batch_size_no_prefill: int = 1,
    generated_tokens: torch.Tensor | None = None,
    device: str = "cuda",
) -> tuple[torch.Tensor, LLMStateType]:
    """A simple function to generate tokens from a language model.
    It generates exactly max_length tokens.

    Args:
        llm_forward: The forward function of the language model.
        prefill_tokens: The tokens to prefill the model with.
        max_length: The maximum length of the generated tokens.
        token_sample_fn: The function to sample the next token.
        bos_token_id: The id of the beginning of sequence token.
        state: The state of the language model.
        batch_size_no_prefill: The batch size used for generation if no prefill_tokens are given.
        generated_tokens: The generated tokens tensor.
        device: The device to use.

    Returns:
        generated_tokens: The generated tokens tensor.
        state: The state of the language model after generation.
    """

    if prefill_tokens is None:
        prefill_tokens = torch.full((batch_size_no_prefill, 1), fill_value=bos_token_id, dtype=torch.long, device=device)
    
    if prefill_tokens.ndim == 1:
        prefill_tokens = prefill_tokens[:, None]

    batch_size = prefill_tokens.size(0)

    if max_length > 0:
        # init the generated tokens tensors
        # we add 1 to the max_length to account for the BOS token
        if generated_tokens is None:
            generated_tokens = torch.empty(
                (batch_size, max_length), dtype=torch.long, device=device
            )
        else:
            assert generated_tokens.shape == (batch_size, max_length), (
                f"Generated tokens shape: {tuple(generated_tokens.shape)}, "
                f"expected {(batch_size, max_length)}"
            )

        last_token = prefill_tokens
        for i in range(max_length):
            with record_function(f"generate_tokens_step_{i}"):
                logits, state = llm_forward(last_token, state)
                next_token = token_sample_fn(logits[:, -1:])
                generated_tokens[:, i:i+1] = next_token
                last_token = next_token
    else:
        # we only return the state
        generated_tokens = None

    return generated_tokens, state


class TinyMLSTMLM(nn.Module):
    def __init__(self, vocab_size=32, embedding_dim=16, num_heads=2):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, embedding_dim)
        self.qkv = nn.Linear(embedding_dim, 3 * embedding_dim)
        self.cell = mLSTMCell(mLSTMCellConfig(context_length=8, embedding_dim=embedding_dim, num_heads=num_heads))
        self.lm_head = nn.Linear(embedding_dim, vocab_size)

    def forward(self, tokens, state=None):
        x = self.embedding(tokens)
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        cell_state = None if state is None else state["cell"]
        h, cell_state = self.cell.step(q, k, v, mlstm_state=cell_state)
        return self.lm_head(x + h), {"cell": cell_state}


def build_llm_forward():
    mlstm = TinyMLSTMLM()

    def llm_forward(tokens, state):
        return mlstm(tokens, state)

    return llm_forward


generate_tokens_fn = torch.compile(generate_tokens)


def make():
    torch.manual_seed(0)
    llm_forward = build_llm_forward()
    prefill_1d = torch.randint(0, 32, (2,))
    return generate_tokens, [
        (llm_forward, None, 4, greedy_sampling, 0, None, 1, None, "cpu"),
        (llm_forward, prefill_1d, 3, greedy_sampling, 0, None, 1, torch.zeros(2, 3, dtype=torch.long), "cpu"),
        (llm_forward, prefill_1d[:, None], 0, greedy_sampling, 0, None, 1, None, "cpu"),
    ]
