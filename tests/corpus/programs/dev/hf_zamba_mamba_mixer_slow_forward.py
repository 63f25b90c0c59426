"""Zamba Mamba decoder layer on the slow (no-kernel) path: multi-head selective scan with a hybrid cache.

Source: huggingface/transformers@010496ec8160aeb33dd80fd199f8c2762f7e4b74:src/transformers/models/zamba/modeling_zamba.py:560-640,735-855,1000-1060
Kept: ZambaMambaMixer.__init__ parameter layout (per-head x_proj/dt_proj weights, A_log, D),
slow_forward verbatim (isinstance cache check, batch-size match, `self.training` clone, has_previous_state
decode branch with torch.roll and in-place conv_state write, pad branch, per-step Python recurrence loop,
ssm_state written back to the cache), forward's use_fast_kernels dispatch, ZambaRMSNorm,
ZambaMambaDecoderLayer.forward (transformer_hidden_states add, residual, tuple outputs).
Simplified: HybridMambaAttentionDynamicCache reduced to its conv_states/ssm_states lists and
has_previous_state flag (no DynamicCache base, no attention kv lists); tiny sizes.
"""
from typing import Optional, Tuple

import torch
from torch import nn


class ZambaConfig:
    hidden_size = 8
    mamba_d_state = 4
    mamba_d_conv = 4
    mamba_expand = 2
    mamba_dt_rank = 2
    n_mamba_heads = 2
    mamba_conv_bias = True
    mamba_proj_bias = False
    hidden_mamba_act = "silu"
    use_mamba_kernels = False
    rms_norm_eps = 1e-6
    num_hidden_layers = 1


ACT2FN = {"silu": nn.SiLU(), "gelu": nn.GELU()}
is_fast_path_available = False


class HybridMambaAttentionDynamicCache:
    def __init__(self, config, batch_size, dtype=torch.float32, device=None):
        self.dtype = dtype
        self.has_previous_state = False
        self.intermediate_size = config.mamba_expand * config.hidden_size
        self.ssm_state_size = config.mamba_d_state
        self.conv_kernel_size = config.mamba_d_conv
        self.n_mamba_heads = config.n_mamba_heads
        self.conv_states = []
        self.ssm_states = []
        for i in range(config.num_hidden_layers):
            self.conv_states += [
                torch.zeros(batch_size, self.intermediate_size, self.conv_kernel_size, device=device, dtype=dtype)
            ]
            cache_shape = (
                batch_size,
                self.n_mamba_heads,
                self.intermediate_size // self.n_mamba_heads,
                self.ssm_state_size,
            )
            self.ssm_states += [torch.zeros(cache_shape, device=device, dtype=dtype)]


class ZambaRMSNorm(nn.Module):
    def __init__(self, hidden_size, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self.variance_epsilon = eps

    def forward(self, hidden_states):
        input_dtype = hidden_states.dtype
        hidden_states = hidden_states.to(torch.float32)
        variance = hidden_states.pow(2).mean(-1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
        return self.weight * hidden_states.to(input_dtype)


class ZambaMambaMixer(nn.Module):
    def __init__(self, config: ZambaConfig, layer_idx):
        super().__init__()
        self.config = config
        self.layer_idx = layer_idx
        self.hidden_size = config.hidden_size
        self.ssm_state_size = config.mamba_d_state
        self.conv_kernel_size = config.mamba_d_conv
        self.intermediate_size = config.mamba_expand * config.hidden_size
        self.time_step_rank = config.mamba_dt_rank
        self.n_mamba_heads = config.n_mamba_heads
        self.use_conv_bias = config.mamba_conv_bias
        self.use_bias = config.mamba_proj_bias
        self.conv1d = nn.Conv1d(
            in_channels=self.intermediate_size,
            out_channels=self.intermediate_size,
            bias=self.use_conv_bias,
            kernel_size=self.conv_kernel_size,
            groups=self.intermediate_size,
            padding=self.conv_kernel_size - 1,
        )

        self.activation = config.hidden_mamba_act
        self.act = ACT2FN[config.hidden_mamba_act]

        self.use_fast_kernels = config.use_mamba_kernels

        # projection of the input hidden states
        self.in_proj = nn.Linear(self.hidden_size, self.intermediate_size * 2, bias=self.use_bias)
        # selective projection used to make dt, B and C input dependent
        self.x_proj_weight = nn.Parameter(
            (
                torch.rand(
                    self.n_mamba_heads,
                    self.time_step_rank + self.ssm_state_size * 2,
                    self.intermediate_size // self.n_mamba_heads,
                )
                - 0.5
            )
            * 2
            / self.intermediate_size**0.5
        )
        # time step projection (discretization)
        self.dt_proj_weight = nn.Parameter(
            (torch.rand(self.n_mamba_heads, self.intermediate_size // self.n_mamba_heads, self.time_step_rank) - 0.5)
            * 2
            / self.time_step_rank**0.5
        )  # (h d dt_rank)
        self.dt_proj_bias = nn.Parameter(
            torch.zeros(self.n_mamba_heads, self.intermediate_size // self.n_mamba_heads)
        )  # (h d)

        # S4D real initialization. These are not discretized!
        A = torch.arange(1, self.ssm_state_size + 1, dtype=torch.float32)[None, :]
        A = A.expand(self.intermediate_size, -1).contiguous()
        self.A_log = nn.Parameter(
            torch.log(A).reshape(self.n_mamba_heads, self.intermediate_size // self.n_mamba_heads, -1)
        )
        self.D = nn.Parameter(torch.ones(self.n_mamba_heads, self.intermediate_size // self.n_mamba_heads))
        self.out_proj = nn.Linear(self.intermediate_size, self.hidden_size, bias=self.use_bias)

    def slow_forward(self, input_states, cache_params: HybridMambaAttentionDynamicCache = None):
        batch_size, seq_len, _ = input_states.shape
        dtype = input_states.dtype
        # 1. Gated linear projection
        projected_states = self.in_proj(input_states).transpose(1, 2)  # (b d l)

        hidden_states, gate = projected_states.view(batch_size, -1, 2, seq_len).chunk(2, dim=2)
        hidden_states = hidden_states.squeeze(2).contiguous()
        gate = gate.squeeze(2)
        gate = gate.reshape(batch_size, self.n_mamba_heads, -1, seq_len).transpose(0, 1)  # (h b d l)

        use_cache = isinstance(cache_params, HybridMambaAttentionDynamicCache)
        # 2. Convolution sequence transformation
        if use_cache and cache_params.ssm_states[self.layer_idx].shape[0] == batch_size:
            if self.training:
                # In training mode, we don't want to perform in-place operations on ssm_state so we can compute the backwards pass
                ssm_state = cache_params.ssm_states[self.layer_idx].clone()
            else:
                ssm_state = cache_params.ssm_states[self.layer_idx]

            ssm_state = ssm_state.to(hidden_states.device)

            if (
                cache_params.has_previous_state
                and seq_len == 1
                and cache_params.conv_states[self.layer_idx].shape[0] == batch_size
            ):
                conv_state = cache_params.conv_states[self.layer_idx]  # (b d conv_size)
                conv_state = torch.roll(conv_state, shifts=-1, dims=-1)
                conv_state[:, :, -1] = hidden_states[:, :, 0]
                cache_params.conv_states[self.layer_idx] = conv_state
                hidden_states = torch.sum(conv_state * self.conv1d.weight[:, 0, :], dim=-1)
                if self.use_conv_bias:
                    hidden_states += self.conv1d.bias
                hidden_states = self.act(hidden_states).to(dtype).unsqueeze(-1)  # (b d 1) : decoding
            else:
                conv_state = nn.functional.pad(hidden_states, (self.conv_kernel_size - hidden_states.shape[-1], 0))
                cache_params.conv_states[self.layer_idx] = conv_state
                hidden_states = self.act(self.conv1d(hidden_states)[..., :seq_len])  # (b d l)
        else:
            ssm_state = torch.zeros(
                (batch_size, self.n_mamba_heads, self.intermediate_size // self.n_mamba_heads, self.ssm_state_size),
                device=hidden_states.device,
                dtype=dtype,
            )  # (b h d l)
            hidden_states = self.act(self.conv1d(hidden_states)[..., :seq_len])  # (b d l)

        # 3. State Space Model sequence transformation
        # 3.a. Selection:  [batch, seq_len, self.time_step_rank + self.ssm_state_size * 2]
        hidden_states = hidden_states.reshape(
            -1, self.n_mamba_heads, self.intermediate_size // self.n_mamba_heads, seq_len
        ).transpose(0, 1)  # (h b d l)
        ssm_parameters = (self.x_proj_weight[:, None, :, :] @ hidden_states).transpose(-1, -2)  # (h b l d)

        time_step, B, C = torch.split(
            ssm_parameters, [self.time_step_rank, self.ssm_state_size, self.ssm_state_size], dim=-1
        )  # (h b l d)

        discrete_time_step = (self.dt_proj_weight[:, None] @ time_step.transpose(-1, -2)) + self.dt_proj_bias[
            :, None, :, None
        ]  # (h b d l)

        discrete_time_step = nn.functional.softplus(discrete_time_step)

        # 3.b. Discretization: B and C to [batch, seq_len, intermediate_size, ssm_state_size] (SRAM)
        A = -torch.exp(self.A_log.float())
        discrete_A = torch.exp(A[:, None, :, None, :] * discrete_time_step[:, :, :, :, None])  # (h b d l state)
        discrete_B = discrete_time_step[:, :, :, :, None] * B[:, :, None, :, :].float()  # (h b d l state)
        deltaB_u = discrete_B * hidden_states[:, :, :, :, None].float()  # (h b d l state)
        # 3.c perform the recurrence y <- SSM(A, B, C)(x)
        scan_outputs = []
        for i in range(seq_len):
            ssm_state = discrete_A[:, :, :, i, :].transpose(0, 1) * ssm_state + deltaB_u[:, :, :, i, :].transpose(
                0, 1
            )  # (h b d state)
            scan_output = torch.matmul(ssm_state.transpose(0, 1).to(dtype), C[:, :, i, :].unsqueeze(-1))  # (h b d 1)
            scan_outputs.append(scan_output[:, :, :, 0])
        scan_output = torch.stack(scan_outputs, dim=-1)  # (h b d l)
        scan_output = scan_output + (hidden_states * self.D[:, None, :, None])  # (h b d l)
        scan_output = scan_output * self.act(gate)

        if use_cache:
            cache_params.ssm_states[self.layer_idx] = ssm_state

        # 4. Final linear projection
        contextualized_states = self.out_proj(
            scan_output.transpose(0, 1).reshape(batch_size, -1, seq_len).transpose(1, 2)
        )  # (b l d)
        return contextualized_states

    def forward(self, hidden_states, cache_params: HybridMambaAttentionDynamicCache = None):
        if self.use_fast_kernels:
            if not is_fast_path_available or "cuda" not in self.x_proj_weight.device.type:
                raise ValueError(
                    "Fast Mamba kernels are not available. Make sure to they are installed and that "
                    "the mamba module is on a CUDA device. lease run 'pip install causal-conv1d>=1.2.0' "
                    "and 'pip install mamba-ssm', or set use_fast_kernels=False in the model's config."
                )
            return self.cuda_kernels_forward(hidden_states, cache_params)
        return self.slow_forward(hidden_states, cache_params)


class ZambaMambaDecoderLayer(nn.Module):
    def __init__(self, config: ZambaConfig, layer_idx: int):
        super().__init__()
        self.mamba = ZambaMambaMixer(config=config, layer_idx=layer_idx)
        self.input_layernorm = ZambaRMSNorm(config.hidden_size, eps=config.rms_norm_eps)
        self.layer_idx = layer_idx

    def forward(
        self,
        hidden_states: torch.Tensor,
        transformer_hidden_states: Optional[torch.Tensor] = None,
        attention_mask: Optional[torch.Tensor] = None,
        position_ids: Optional[torch.LongTensor] = None,
        past_key_value: Optional[HybridMambaAttentionDynamicCache] = None,
        output_attentions: Optional[bool] = False,
        use_cache: Optional[bool] = False,
        cache_position: Optional[torch.LongTensor] = None,
    ) -> Tuple[torch.FloatTensor, Optional[Tuple[torch.FloatTensor, torch.FloatTensor]]]:
        residual = hidden_states

        hidden_states = hidden_states + transformer_hidden_states if transformer_hidden_states is not None else hidden_states
        hidden_states = self.input_layernorm(hidden_states)

        hidden_states = self.mamba(
            hidden_states=hidden_states,
            cache_params=past_key_value,
        )

        self_attn_weights = None

        # residual connection after mamba
        hidden_states = residual + hidden_states

        outputs = (hidden_states,)

        if output_attentions:
            outputs += (self_attn_weights,)

        if use_cache:
            outputs += (past_key_value,)

        return outputs


layer = torch.compile(ZambaMambaDecoderLayer(ZambaConfig(), layer_idx=0).eval())


def make():
    torch.manual_seed(0)
    config = ZambaConfig()
    x = torch.randn(2, 5, 8)
    transformer_out = torch.randn(2, 5, 8)
    prefill_cache = HybridMambaAttentionDynamicCache(config, batch_size=2)
    decode_cache = HybridMambaAttentionDynamicCache(config, batch_size=2)
    decode_cache.has_previous_state = True
    return ZambaMambaDecoderLayer(config, layer_idx=0).eval(), [
        (x,),
        (x, transformer_out),
        (x, None, None, None, prefill_cache, False, True),
        (x[:, :1], None, None, None, decode_cache, False, True),
    ]
