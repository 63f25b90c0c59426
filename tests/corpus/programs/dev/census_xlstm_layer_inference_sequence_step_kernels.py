"""xLSTM (NX-AI xLSTM-7B in transformers) mLSTM layer in inference mode with the native kernels: wrap_chunkwise_arbitrary_sequence_length picks the chunkwise kernel for whole chunks, the per-timestep recurrent sequence kernel (Python loop, list of h, torch.stack) for the remainder, or the single-step kernel with its shape-validation raises when sequence_length == 1; functools.partial-bound kernels.

Source: huggingface/transformers@00bb1d1244047eadf8aa198f211e54d9e67f814d:src/transformers/models/xlstm/modeling_xlstm.py:55-700
Census: penguinwu/oss-model-graph-break-corpus lists xLSTMModel (corpus/golden_set.json).
Kept: soft_cap, mlstm_chunkwise_recurrent_fw_C, mlstm_chunkwise_native_autograd,
mlstm_recurrent_step_native, mlstm_recurrent_sequence_native,
wrap_chunkwise_arbitrary_sequence_length, xLSTMBackend (partial-bound
inference/train functions, mode dispatch), xLSTMMultiHeadLayerNorm and
xLSTMLayer (fused weight mode, tensor_split, state unpacking, h shape check)
as in the non-`is_xlstm_available()` branch.
Simplified: mlstm_chunkwise_parallel_fw_H is not reproduced (its return line
calls a tensor, so the chunkwise path cannot run in eager): the inputs keep
the sequence shorter than chunk_size, so the chunkwise kernel is never called
(it keeps its place in the dispatch); no wrap_chunkwise_pad_zeros, no
xLSTMBlock/FeedForward/model wrapper; hidden 16, 2 heads, chunk_size 8.
Compiled as `torch.compile(xLSTMLayer(config).eval())`.
"""
from functools import partial
from typing import Callable, Literal, Optional, Union

import torch
import torch.nn.functional as F
from torch import nn

mLSTMLayerStateType = tuple[torch.Tensor, torch.Tensor, torch.Tensor]


class xLSTMConfig:
    hidden_size = 16
    num_heads = 2
    qk_dim_factor = 0.5
    v_dim_factor = 1.0
    gate_soft_cap = 15.0
    weight_mode = "fused"
    mode = "inference"
    chunk_size = 8
    eps = 1e-6
    norm_eps = 1e-6
    use_bias = False
    norm_reduction_force_float32 = True
    return_last_states = True
    inference_state_dtype = "float32"
    autocast_kernel_dtype = "bfloat16"


def soft_cap(values: torch.Tensor, cap_value: Optional[Union[float, torch.Tensor]] = None) -> torch.Tensor:
    if cap_value is None:
        return values
    return cap_value * torch.tanh(values / cap_value)


def mlstm_chunkwise_recurrent_fw_C(
    matK: torch.Tensor,
    matV: torch.Tensor,
    vecB: torch.Tensor,
    vecI: torch.Tensor,
    matC_states: torch.Tensor = None,
    vecN_states: torch.Tensor = None,
    scaMinter_states: torch.Tensor = None,
    matC_initial: torch.Tensor = None,
    vecN_initial: torch.Tensor = None,
    scaMinter_initial: torch.Tensor = None,
    qk_scale: Optional[float] = None,
    chunk_size: int = 64,
    num_chunks: int = 1,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    batch_size, nh, _, dhqk, dhhv = *matK.shape, matV.shape[-1]
    nc = num_chunks
    _dtype, _device = matK.dtype, matK.device

    if qk_scale is None:
        qk_scale = dhqk**-0.5

    # initialize the states tensors
    if matC_states is None:
        matC_states = torch.zeros((batch_size, nh, (nc + 1) * dhqk, dhhv), dtype=_dtype, device=_device)
    if vecN_states is None:
        vecN_states = torch.zeros((batch_size, nh, (nc + 1) * dhqk), dtype=_dtype, device=_device)
    if scaMinter_states is None:
        scaMinter_states = torch.zeros((batch_size, nh, (nc + 1)), dtype=_dtype, device=_device)

    # assign the initial states to the running states
    matC_k = (
        torch.zeros((batch_size, nh, dhqk, dhhv), dtype=_dtype, device=_device)
        if matC_initial is None
        else matC_initial
    )
    vecN_k = (
        torch.zeros((batch_size, nh, dhqk), dtype=_dtype, device=_device) if vecN_initial is None else vecN_initial
    )
    scaM_inter_k = (
        torch.zeros((batch_size, nh, 1), dtype=_dtype, device=_device)
        if scaMinter_initial is None
        else scaMinter_initial
    )
    vecA = vecB[..., -1, None] - vecB + vecI
    scaG = vecB[..., -1]
    scaA_max = vecA.max(-1).values

    scaM_inter_k = scaM_inter_k.squeeze(-1)

    for key in range(0, num_chunks):
        matC_states[:, :, key * dhqk : (key + 1) * dhqk, :] = matC_k
        vecN_states[:, :, key * dhqk : (key + 1) * dhqk] = vecN_k
        scaMinter_states[:, :, key] = scaM_inter_k

        scaA_max_k = scaA_max[:, :, key]
        scaG_k = scaG[:, :, key]
        scaM_inter_k_next = torch.max(scaG_k + scaM_inter_k, scaA_max_k)
        matK_chunk = matK[:, :, key * chunk_size : (key + 1) * chunk_size, :]  # * qk_scale
        matV_chunk = matV[:, :, key * chunk_size : (key + 1) * chunk_size, :]
        vecA_k = vecA[:, :, key, :]

        vecAbar_k = torch.exp(vecA_k - scaM_inter_k_next[..., None])[:, :, :, None]

        matK_chunk_gated = matK_chunk * vecAbar_k

        scaGbar_k = torch.exp(scaG_k + scaM_inter_k - scaM_inter_k_next)[:, :, None]

        matC_k_next = scaGbar_k[..., None] * matC_k + matK_chunk_gated.transpose(-2, -1) @ (matV_chunk)

        vecN_k_next = scaGbar_k * vecN_k + matK_chunk_gated.transpose(-2, -1).sum(-1)

        scaM_inter_k = scaM_inter_k_next
        matC_k = matC_k_next
        vecN_k = vecN_k_next

    matC_states[:, :, -dhqk:, :] = matC_k
    vecN_states[:, :, -dhqk:] = vecN_k
    scaMinter_states[:, :, -1] = scaM_inter_k

    return matC_states, vecN_states, scaMinter_states


def mlstm_chunkwise_native_autograd(
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    igate: torch.Tensor,
    fgate: torch.Tensor,
    c_initial: torch.Tensor = None,
    n_initial: torch.Tensor = None,
    m_initial: torch.Tensor = None,
    return_last_states: bool = False,
    eps: float = 1e-6,
    chunk_size: int = 64,
    **kwargs,
) -> Union[torch.Tensor, tuple[torch.Tensor, tuple[torch.Tensor, torch.Tensor, torch.Tensor]]]:
    batch_size, nh, sequence_length, dhqk = query.shape
    if sequence_length % chunk_size != 0:
        raise ValueError(f"Sequence length {sequence_length} is not divisible by chunk size {chunk_size}.")
    nc = sequence_length // chunk_size

    vecI = igate.view(batch_size, nh, nc, chunk_size)
    vecF = fgate.view(batch_size, nh, nc, chunk_size)

    vecF_logsig = F.logsigmoid(vecF)
    vecB = vecF_logsig.cumsum(-1)

    qk_scale = dhqk**-0.5

    matC_k_states, vecN_k_states, scaMinter_k_states = mlstm_chunkwise_recurrent_fw_C(
        matK=key,
        matV=value,
        vecB=vecB,
        vecI=vecI,
        matC_initial=c_initial,
        vecN_initial=n_initial,
        scaMinter_initial=m_initial,
        qk_scale=qk_scale,
        chunk_size=chunk_size,
        num_chunks=nc,
    )
    raise NotImplementedError("mlstm_chunkwise_parallel_fw_H is not reproduced in this program")


def mlstm_recurrent_step_native(
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    igate: torch.Tensor,
    fgate: torch.Tensor,
    cstate: torch.Tensor,
    nstate: torch.Tensor,
    mstate: torch.Tensor,
    eps: float = 1e-6,
    dtype_state: torch.dtype = torch.float32,
    **kwargs,
) -> tuple[torch.Tensor, tuple[torch.Tensor, torch.Tensor, torch.Tensor]]:
    """This is a single step of the mLSTM operation in recurrent form."""
    dtype_qkv = query.dtype
    matC_old = cstate.to(dtype=dtype_state)
    vecN_old = nstate.to(dtype=dtype_state)
    scaM_old = mstate.to(dtype=dtype_state)

    batch_size, nh, dhqk = query.shape
    _, _, dhhv = value.shape
    if query.shape != key.shape:
        raise ValueError("query and key must have the same shape")
    if matC_old.shape != (batch_size, nh, dhqk, dhhv):
        raise ValueError(f"matC_old has wrong shape, got {matC_old.shape}")
    if vecN_old.shape != (batch_size, nh, dhqk):
        raise ValueError(f"vecN_old has wrong shape, got {vecN_old.shape}")
    if scaM_old.shape != (batch_size, nh, 1):
        raise ValueError(f"scaM_old has wrong shape, got {scaM_old.shape}")
    if igate.shape != (batch_size, nh, 1):
        raise ValueError(f"scaI has wrong shape, got {igate.shape}")
    if fgate.shape != (batch_size, nh, 1):
        raise ValueError(f"scaF has wrong shape, got {fgate.shape}")

    # gates
    scaF_log = torch.nn.functional.logsigmoid(fgate)

    # update rule
    scaM_state_new = torch.max(scaF_log + scaM_old, igate)

    scaF_act = torch.exp(scaF_log + scaM_old - scaM_state_new)
    scaI_act = torch.exp(igate - scaM_state_new)

    vecQ_scaled = query * (dhqk ** (-0.5))
    matC_state_new = scaF_act[:, :, :, None] * matC_old + scaI_act[:, :, :, None] * (
        key[:, :, :, None] @ value[:, :, None, :]
    )
    vecN_state_new = scaF_act * vecN_old + scaI_act * key
    h_num = vecQ_scaled[:, :, None, :] @ matC_state_new.to(dtype=dtype_qkv)
    h_num = h_num.squeeze(2).to(dtype=dtype_state)

    qn_dotproduct = vecQ_scaled[:, :, None, :] @ vecN_state_new[:, :, :, None].to(dtype=dtype_qkv)
    qn_dotproduct = qn_dotproduct.squeeze(2)
    max_val = torch.exp(-scaM_state_new)
    h_denom = (torch.maximum(qn_dotproduct.abs(), max_val) + eps).to(dtype=dtype_state)
    h = h_num / h_denom

    h = h.to(dtype=dtype_qkv)
    matC_state_new = matC_state_new.to(dtype=dtype_state)
    vecN_state_new = vecN_state_new.to(dtype=dtype_state)
    scaM_state_new = scaM_state_new.to(dtype=dtype_state)
    return h, (matC_state_new, vecN_state_new, scaM_state_new)


def mlstm_recurrent_sequence_native(
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    igate: torch.Tensor,
    fgate: torch.Tensor,
    c_initial: torch.Tensor = None,
    n_initial: torch.Tensor = None,
    m_initial: torch.Tensor = None,
    return_last_states: bool = False,
    eps: float = 1e-6,
    dtype_state: torch.dtype = torch.float32,
    **kwargs,
):
    batch_size, nh, sequence_length, dhqk = query.shape
    dhv = value.shape[-1]
    device = query.device

    if c_initial is not None:
        if n_initial is None or m_initial is None:
            raise ValueError("Initial states must be provided together.")
        if n_initial is None or m_initial is None:
            raise ValueError("Initial states must be provided together.")
        matC_state, vecN_state, vecM_state = (
            c_initial.to(dtype=dtype_state),
            n_initial.to(dtype=dtype_state),
            m_initial.to(dtype=dtype_state),
        )
    else:
        # memory state
        matC_state = torch.zeros((batch_size, nh, dhqk, dhv), dtype=dtype_state, device=device)
        # normalizer state
        vecN_state = torch.zeros((batch_size, nh, dhqk), dtype=dtype_state, device=device)
        # max state
        vecM_state = torch.zeros((batch_size, nh, 1), dtype=dtype_state, device=device)

    vecH_list = []
    for t in range(sequence_length):
        # gates
        vecF_t, vecI_t = fgate[:, :, t, None], igate[:, :, t, None]

        # projections
        vecQ_t, vecK_t, vecV_t = query[:, :, t, :], key[:, :, t, :], value[:, :, t, :]

        # step
        vecH, (matC_state, vecN_state, vecM_state) = mlstm_recurrent_step_native(
            cstate=matC_state,
            nstate=vecN_state,
            mstate=vecM_state,
            query=vecQ_t,
            key=vecK_t,
            value=vecV_t,
            igate=vecI_t,
            fgate=vecF_t,
            eps=eps,
            dtype_state=dtype_state,
            **kwargs,
        )
        vecH_list.append(vecH)

    matH = torch.stack(vecH_list, dim=-2)

    if return_last_states:
        return matH, (matC_state, vecN_state, vecM_state)
    else:
        return matH


def wrap_chunkwise_arbitrary_sequence_length(
    mlstm_chunkwise_kernel: Callable,
    mlstm_sequence_kernel: Callable,
    mlstm_step_kernel: Callable,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    fgate: torch.Tensor,
    igate: torch.Tensor,
    c_initial: torch.Tensor = None,
    n_initial: torch.Tensor = None,
    m_initial: torch.Tensor = None,
    return_last_states: bool = True,
    eps: float = 1e-6,
    autocast_kernel_dtype: torch.dtype = torch.bfloat16,
    chunk_size: int = 64,
    enable_logging: bool = False,
) -> Union[torch.Tensor, tuple[torch.Tensor, tuple[torch.Tensor, torch.Tensor, torch.Tensor]]]:
    batch_size, nh, sequence_length, dhqk = key.shape
    dhhv = value.shape[-1]

    c_state = (
        c_initial
        if c_initial is not None
        else torch.zeros(batch_size, nh, dhqk, dhhv, device=key.device, dtype=torch.float32)
    )
    n_state = (
        n_initial
        if n_initial is not None
        else torch.zeros(batch_size, nh, dhqk, device=key.device, dtype=torch.float32)
    )
    m_state = (
        m_initial
        if m_initial is not None
        else torch.zeros(batch_size, nh, 1, device=key.device, dtype=torch.float32)
    )

    if sequence_length > 1:
        # process the sequence length in chunks
        h_outs = []
        seq_len_start_idx = 0
        remaining_seq_len = sequence_length - seq_len_start_idx
        num_chunks = remaining_seq_len // chunk_size
        if num_chunks > 0:
            iter_seq_len = chunk_size * num_chunks
            seq_len_idx = seq_len_start_idx + iter_seq_len
            h_out, (c_state, n_state, m_state) = mlstm_chunkwise_kernel(
                query=query[..., seq_len_start_idx:seq_len_idx, :].contiguous(),
                key=key[..., seq_len_start_idx:seq_len_idx, :].contiguous(),
                value=value[..., seq_len_start_idx:seq_len_idx, :].contiguous(),
                fgate=fgate[..., seq_len_start_idx:seq_len_idx].contiguous(),
                igate=igate[..., seq_len_start_idx:seq_len_idx].contiguous(),
                c_initial=c_state,
                n_initial=n_state,
                m_initial=m_state,
                chunk_size=chunk_size,
                return_last_states=True,
                autocast_kernel_dtype=autocast_kernel_dtype,
                eps=eps,
            )
            seq_len_start_idx += iter_seq_len
            h_outs.append(h_out)

        remaining_seq_len = sequence_length - seq_len_start_idx

        if remaining_seq_len > 0:
            h_out, (c_state, n_state, m_state) = mlstm_sequence_kernel(
                query=query[..., seq_len_start_idx:sequence_length, :].contiguous(),
                key=key[..., seq_len_start_idx:sequence_length, :].contiguous(),
                value=value[..., seq_len_start_idx:sequence_length, :].contiguous(),
                igate=igate[..., seq_len_start_idx:sequence_length].contiguous(),
                fgate=fgate[..., seq_len_start_idx:sequence_length].contiguous(),
                c_initial=c_state,
                n_initial=n_state,
                m_initial=m_state,
                return_last_states=True,
                eps=eps,
            )
            h_outs.append(h_out)
        h_out = torch.concatenate(h_outs, dim=2)

    else:
        if sequence_length != 1:
            raise ValueError(
                f"Received empty sequence (sequence_length={sequence_length}), require at least single element in the sequence."
            )
        h_out, (c_state, n_state, m_state) = mlstm_step_kernel(
            query=query.squeeze(2),
            key=key.squeeze(2),
            value=value.squeeze(2),
            igate=igate,
            fgate=fgate,
            cstate=c_state,
            nstate=n_state,
            mstate=m_state,
            eps=eps,
        )
        h_out = h_out[:, :, None, :]

    if return_last_states:
        return h_out, (c_state, n_state, m_state)
    else:
        return h_out


class xLSTMBackend(nn.Module):
    config_class = xLSTMConfig

    def __init__(self, config: xLSTMConfig):
        super().__init__()
        self.config = config
        self.chunkwise_kernel_fn = mlstm_chunkwise_native_autograd
        self.sequence_kernel_fn = mlstm_recurrent_sequence_native
        self.step_kernel_fn = mlstm_recurrent_step_native

        self._inference_fn = partial(
            wrap_chunkwise_arbitrary_sequence_length,
            mlstm_chunkwise_kernel=self.chunkwise_kernel_fn,
            mlstm_sequence_kernel=partial(
                self.sequence_kernel_fn,
                dtype_state=getattr(torch, config.inference_state_dtype),
            ),
            mlstm_step_kernel=partial(
                self.step_kernel_fn,
                dtype_state=getattr(torch, config.inference_state_dtype),
            ),
            chunk_size=config.chunk_size,
            eps=config.eps,
            autocast_kernel_dtype=getattr(torch, config.autocast_kernel_dtype),
            return_last_states=True,
        )

        train_kernel_fn = partial(
            self.chunkwise_kernel_fn,
            autocast_kernel_dtype=getattr(torch, config.autocast_kernel_dtype),
            eps=config.eps,
            chunk_size=config.chunk_size,
        )
        self._train_fn = train_kernel_fn

    def forward(
        self,
        query: torch.Tensor,
        key: torch.Tensor,
        value: torch.Tensor,
        igate: torch.Tensor,
        fgate: torch.Tensor,
        c_initial: torch.Tensor = None,
        n_initial: torch.Tensor = None,
        m_initial: torch.Tensor = None,
        return_last_states: bool = False,
        mode: Optional[Literal["train", "inference"]] = None,
    ):
        if mode is None:
            mode = self.config.mode

        if "train" in mode:
            if return_last_states is None:
                return_last_states = self.config.return_last_states

            if self.config.mode == "train_with_padding":
                if return_last_states:
                    raise ValueError("return_last_states=True is not supported with train_with_padding mode.")

            return self._train_fn(
                query=query,
                key=key,
                value=value,
                igate=igate,
                fgate=fgate,
                c_initial=c_initial,
                n_initial=n_initial,
                m_initial=m_initial,
                return_last_states=return_last_states,
            )

        elif "inference" in mode:
            # inference mode always returns the last states
            return self._inference_fn(
                query=query,
                key=key,
                value=value,
                igate=igate,
                fgate=fgate,
                c_initial=c_initial,
                n_initial=n_initial,
                m_initial=m_initial,
            )
        else:
            raise ValueError(f"Unknown mode: {self.config.mode}")


class xLSTMMultiHeadLayerNorm(nn.Module):
    def __init__(
        self,
        num_heads: int,
        head_dim: int,
        eps: float = 1e-6,
        use_weight: bool = True,
        use_bias: bool = False,
        force_float32_reductions: bool = True,
    ):
        super().__init__()
        self.num_features = num_heads * head_dim
        self.eps = eps
        self.force_float32_reductions = force_float32_reductions

        if use_weight:
            self.weight = nn.Parameter(torch.ones(self.num_features))
        else:
            self.weight = None

        if use_bias:
            self.bias = nn.Parameter(torch.zeros(self.num_features))
        else:
            self.bias = None
        self.num_heads = num_heads
        self.head_dim = head_dim

    def _apply_weight_bias(self, x: torch.Tensor) -> torch.Tensor:
        if self.weight is not None:
            x = x * self.weight
        if self.bias is not None:
            x = x + self.bias
        return x

    def _layer_normalize(self, x: torch.Tensor) -> torch.Tensor:
        in_dtype = x.dtype
        if self.force_float32_reductions:
            x = x.float()
        x_centered = x - x.mean(dim=-1, keepdim=True)
        y = x_centered * torch.rsqrt(x.var(dim=-1, keepdim=True, unbiased=False) + self.eps)
        return y.to(in_dtype)

    def forward(
        self,
        x: torch.Tensor,
    ) -> torch.Tensor:
        batch_size, sequence_length, nh, DH = x.shape
        if nh != self.num_heads:
            raise ValueError(f"Expected {self.num_heads} heads, got {nh}, input shape: {x.shape}")
        if DH != self.head_dim:
            raise ValueError(f"Expected {self.head_dim} head dimension, got {DH}, input shape: {x.shape}")

        x = self._layer_normalize(x)
        x = x.reshape(batch_size, sequence_length, -1)
        x = self._apply_weight_bias(x)
        return x


class xLSTMLayer(nn.Module):
    def __init__(self, config: xLSTMConfig):
        super().__init__()
        self.config = config

        self.v_dim = int(config.hidden_size * config.v_dim_factor)
        self.qk_dim = int(config.hidden_size * config.qk_dim_factor)

        if self.config.weight_mode == "single":
            self.query = nn.Linear(self.config.hidden_size, self.qk_dim, bias=self.config.use_bias)
            self.key = nn.Linear(self.config.hidden_size, self.qk_dim, bias=self.config.use_bias)
            self.value = nn.Linear(self.config.hidden_size, self.v_dim, bias=self.config.use_bias)
            self.ogate_preact = nn.Linear(self.config.hidden_size, self.v_dim, bias=self.config.use_bias)
            self.igate_preact = nn.Linear(self.config.hidden_size, self.config.num_heads, bias=True)
            self.fgate_preact = nn.Linear(self.config.hidden_size, self.config.num_heads, bias=True)
        elif self.config.weight_mode == "fused":
            self.qkv_opreact = nn.Linear(
                in_features=self.config.hidden_size,
                out_features=2 * self.qk_dim + 2 * self.v_dim,
                bias=self.config.use_bias,
            )
            self.ifgate_preact = nn.Linear(
                in_features=self.config.hidden_size,
                out_features=2 * self.config.num_heads,
                bias=True,
            )

        self.ogate_act_fn = nn.Sigmoid()
        self.mlstm_backend = xLSTMBackend(config=self.config)

        self.multihead_norm = xLSTMMultiHeadLayerNorm(
            num_heads=self.config.num_heads,
            head_dim=self.v_dim // self.config.num_heads,
            eps=self.config.norm_eps,
            use_weight=True,
            use_bias=self.config.use_bias,
            force_float32_reductions=self.config.norm_reduction_force_float32,
        )
        self.out_proj = nn.Linear(
            in_features=self.v_dim,
            out_features=self.config.hidden_size,
            bias=self.config.use_bias,
        )

    def forward(
        self, x: torch.Tensor, state: Optional[mLSTMLayerStateType] = None
    ) -> tuple[torch.Tensor, Optional[mLSTMLayerStateType]]:
        if x.ndim != 3:
            raise ValueError(f"Input must have shape [batch_size, sequence_length, HD], got {x.shape}")
        batch_size, sequence_length, _ = x.shape
        if self.config.weight_mode == "single":
            query = self.query(x)
            key = self.key(x)
            value = self.value(x)
            o_preact = self.ogate_preact(x)
            i_preact = soft_cap(self.igate_preact(x), cap_value=self.config.gate_soft_cap)
            f_preact = soft_cap(self.fgate_preact(x), cap_value=self.config.gate_soft_cap)

        elif self.config.weight_mode == "fused":
            qkv_opreact = self.qkv_opreact(x)
            query, key, value, o_preact = torch.tensor_split(
                qkv_opreact,
                (
                    self.qk_dim,
                    2 * self.qk_dim,
                    2 * self.qk_dim + self.v_dim,
                ),
                dim=-1,
            )

            if_preact = soft_cap(self.ifgate_preact(x), cap_value=self.config.gate_soft_cap)
            i_preact, f_preact = torch.tensor_split(if_preact, (self.config.num_heads,), dim=-1)

        query = query.reshape(batch_size, sequence_length, self.config.num_heads, -1).transpose(1, 2)
        key = key.reshape(batch_size, sequence_length, self.config.num_heads, -1).transpose(1, 2)
        value = value.reshape(batch_size, sequence_length, self.config.num_heads, -1).transpose(1, 2)
        i_preact = i_preact.transpose(1, 2)
        f_preact = f_preact.transpose(1, 2)
        if state is None:
            c_initial, n_initial, m_initial = None, None, None
        else:
            c_initial, n_initial, m_initial = state

        h, state = self.mlstm_backend(
            query=query,
            key=key,
            value=value,
            igate=i_preact,
            fgate=f_preact,
            c_initial=c_initial,
            n_initial=n_initial,
            m_initial=m_initial,
        )
        expected_h_shape = (
            batch_size,
            self.config.num_heads,
            sequence_length,
            self.v_dim // self.config.num_heads,
        )
        if h.shape != expected_h_shape:
            raise ValueError(f"Got {h.shape}, expected {expected_h_shape}")

        h = h.transpose(1, 2)
        h_norm = self.multihead_norm(h)
        h_norm = h_norm.reshape(batch_size, sequence_length, -1)

        h_out = self.ogate_act_fn(o_preact) * h_norm

        y = self.out_proj(h_out)
        return y, state


layer = torch.compile(xLSTMLayer(xLSTMConfig()).eval())

RAISING_INPUTS = {2: "ValueError"}


def make():
    torch.manual_seed(0)
    m = xLSTMLayer(xLSTMConfig()).eval()
    x = torch.randn(1, 5, 16)
    # a state for the single-step (decode) call: C (B, nh, dqk, dv), n (B, nh, dqk), m (B, nh, 1)
    state = (torch.randn(1, 2, 4, 8) * 0.1, torch.randn(1, 2, 4) * 0.1, torch.zeros(1, 2, 1))
    return m, [(x,), (torch.randn(1, 1, 16), state), (torch.randn(5, 16),)]
