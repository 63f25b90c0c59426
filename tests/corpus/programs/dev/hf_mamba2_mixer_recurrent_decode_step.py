"""Mamba2 mixer decode step with a state cache: causal_conv1d_update and selective_state_update copy_ into the cached states.

Source: huggingface/transformers@v5.23.0:src/transformers/models/mamba2/modeling_mamba2.py:42-604
Kept: causal_conv1d_update and mamba2_selective_state_update (the torch fallbacks), the
`conv_state is not None and seq_len == 1 and not cache_params.is_recording_past(...)` branch,
the recurrent-form reshapes/expands of Mamba2Mixer.forward, the kwargs merge and the
training-only fused stub.
Also kept: the cached prefill path (update_conv_state, causal_conv1d_fn, chunk scan with
return_final_states and update_recurrent_state).
Simplified: the model's Cache is a small stand-in holding one conv state and one recurrent state
per layer (get_* returning None before any state, update_* copying in place, is_recording_past);
kernel decorators dropped; 4 heads of size 4, state 8.
"""
import math
from collections import OrderedDict

import torch
import torch.nn.functional as F
from torch import nn


class ClassInstantier(OrderedDict):
    def __getitem__(self, key):
        content = super().__getitem__(key)
        cls, kwargs = content if isinstance(content, tuple) else (content, {})
        return cls(**kwargs)


ACT2FN = ClassInstantier({"silu": nn.SiLU, "gelu": nn.GELU})


class Mamba2Config:
    num_heads = 4
    hidden_size = 8
    state_size = 8
    conv_kernel = 4
    expand = 2
    time_step_rank = 1
    use_conv_bias = True
    hidden_act = "silu"
    layer_norm_epsilon = 1e-5
    n_groups = 2
    head_dim = 4
    chunk_size = 4
    time_step_limit = (0.0, float("inf"))
    time_step_min = 0.001
    time_step_max = 0.1
    time_step_floor = 1e-4
    use_bias = False
    layer_types = ["mamba"]


def pad_tensor_by_size(input_tensor: torch.Tensor, pad_size: int):
    pad_shape = (0, 0, 0, 0, 0, pad_size, 0, 0) if len(input_tensor.shape) == 4 else (0, 0, 0, pad_size, 0, 0)

    return torch.nn.functional.pad(input_tensor, pad_shape, mode="constant", value=0)


def reshape_into_chunks(input_tensor, pad_size, chunk_size):
    input_tensor = pad_tensor_by_size(input_tensor, pad_size)

    if len(input_tensor.shape) == 3:
        return input_tensor.reshape(input_tensor.shape[0], -1, chunk_size, input_tensor.shape[2])
    else:
        return input_tensor.reshape(
            input_tensor.shape[0], -1, chunk_size, input_tensor.shape[2], input_tensor.shape[3]
        )


def segment_sum(input_tensor):
    chunk_size = input_tensor.size(-1)
    input_tensor = input_tensor[..., None].expand(*input_tensor.size(), chunk_size)
    mask = torch.tril(torch.ones(chunk_size, chunk_size, device=input_tensor.device, dtype=torch.bool), diagonal=-1)
    input_tensor = input_tensor.masked_fill(~mask, 0)
    tensor_segsum = torch.cumsum(input_tensor, dim=-2)

    mask = torch.tril(torch.ones(chunk_size, chunk_size, device=input_tensor.device, dtype=torch.bool), diagonal=0)
    tensor_segsum = tensor_segsum.masked_fill(~mask, -torch.inf)
    return tensor_segsum


def causal_conv1d_fn(hidden_states, weight, bias=None, activation=None, **kwargs):
    _, hidden_size, seq_len = hidden_states.shape
    padding = weight.shape[-1] - 1

    out = F.conv1d(
        hidden_states.to(weight.dtype),
        weight=weight.unsqueeze(1),
        bias=bias,
        padding=padding,
        groups=hidden_size,
    )[:, :, :seq_len]
    if activation is not None:
        out = ACT2FN[activation](out)
    return out.to(hidden_states.dtype)


class Mamba2StateCache:
    def __init__(self, conv_states, recurrent_states, has_previous_state=True):
        self.has_previous_state = has_previous_state
        self.conv_states = conv_states
        self.recurrent_states = recurrent_states

    def get_conv_state(self, layer_idx, state_idx=0):
        if self.has_previous_state:
            return self.conv_states[layer_idx]
        return None

    def get_recurrent_state(self, layer_idx, state_idx=0):
        if self.has_previous_state:
            return self.recurrent_states[layer_idx]
        return None

    def update_conv_state(self, conv_states, layer_idx, conv_kernel_size=None, **kwargs):
        full_conv_states = conv_states
        if full_conv_states.shape[-1] < conv_kernel_size:
            padding_length = conv_kernel_size - full_conv_states.shape[-1]
            full_conv_states = torch.nn.functional.pad(full_conv_states, (padding_length, 0), value=0)
        self.conv_states[layer_idx].copy_(full_conv_states[..., -conv_kernel_size:])
        return full_conv_states

    def update_recurrent_state(self, recurrent_states, layer_idx, **kwargs):
        self.recurrent_states[layer_idx].copy_(recurrent_states)
        return self.recurrent_states[layer_idx]

    def is_recording_past(self, layer_idx):
        return False


def causal_conv1d_update(hidden_states, conv_state, weight, bias=None, activation=None):
    _, hidden_size, seq_len = hidden_states.shape
    state_len = conv_state.shape[-1]

    hidden_states_new = torch.cat([conv_state, hidden_states], dim=-1).to(weight.dtype)
    conv_state.copy_(hidden_states_new[:, :, -state_len:])
    out = F.conv1d(hidden_states_new, weight.unsqueeze(1), bias, padding=0, groups=hidden_size)
    out = out[:, :, -seq_len:]
    if activation is not None:
        out = ACT2FN[activation](out)
    return out.to(hidden_states.dtype)


def mamba2_selective_state_update(
    state, hidden_states, dt, A, B, C, D=None, dt_bias=None, dt_softplus=False, z=None, **kwargs
):
    batch_size, num_heads, head_dim = hidden_states.shape
    num_groups = B.shape[1]
    state_size = B.shape[-1]

    if dt_bias is not None:
        dt = dt + dt_bias.to(dt.dtype)
    if dt_softplus:
        dt = F.softplus(dt)
    dt = dt[..., None]

    # Discretize A
    dA = torch.exp(dt.float() * A.float()).to(device=state.device)

    # Discretize B
    B = B.reshape(batch_size, num_groups, 1, state_size)
    B = B.expand(batch_size, num_groups, num_heads // num_groups, state_size).contiguous()
    B = B.reshape(batch_size, num_heads, 1, state_size)
    dB = dt * B

    # Discretize x into dB
    dBx = (dB * hidden_states[..., None]).to(device=state.device)

    # State calculation
    ssm_states = state * dA + dBx
    state.copy_(ssm_states.to(state.dtype))

    # Subsequent output
    C = C.reshape(batch_size, num_groups, 1, state_size)
    C = C.expand(batch_size, num_groups, num_heads // num_groups, state_size).contiguous()
    C = C.reshape(batch_size, num_heads, state_size)

    ssm_states = ssm_states.to(device=C.device, dtype=C.dtype)
    ssm_states_reshaped = ssm_states.view(batch_size * num_heads, head_dim, state_size)
    C_reshaped = C.view(batch_size * num_heads, state_size, 1)
    out = torch.bmm(ssm_states_reshaped, C_reshaped)
    out = out.view(batch_size, num_heads, head_dim)

    # D skip connection
    if D is not None:
        out = (out + hidden_states * D).to(out.dtype)

    if z is not None:
        out = out * F.silu(z)

    return out.to(hidden_states.dtype)


def mamba2_chunk_scan(
    hidden_states,
    dt,
    A,
    B,
    C,
    chunk_size,
    D=None,
    dt_bias=None,
    initial_states=None,
    dt_softplus=False,
    dt_limit=(0.0, float("inf")),
    return_final_states=False,
    **kwargs,
):
    batch_size, sequence_length, num_heads, head_dim = hidden_states.shape
    num_groups = B.shape[2]

    if dt_bias is not None:
        dt = dt + dt_bias.to(dt.dtype)
    if dt_softplus:
        dt = F.softplus(dt)
    dt = torch.clamp(dt, min=dt_limit[0], max=dt_limit[1])

    hidden_states = hidden_states.float()
    B = B.float().repeat_interleave(num_heads // num_groups, dim=2, output_size=num_heads)
    C = C.float().repeat_interleave(num_heads // num_groups, dim=2, output_size=num_heads)

    pad_size = (chunk_size - sequence_length % chunk_size) % chunk_size
    D_residual = None
    if D is not None:
        D_residual = D[..., None] * pad_tensor_by_size(hidden_states, pad_size)

    hidden_states = hidden_states * dt[..., None].float()
    A = A.to(hidden_states.dtype) * dt.float()

    hidden_states, A, B, C = [reshape_into_chunks(tensor, pad_size, chunk_size) for tensor in (hidden_states, A, B, C)]

    A = A.permute(0, 3, 1, 2)
    A_cumsum = torch.cumsum(A, dim=-1)

    L = torch.exp(segment_sum(A))

    G = torch.einsum("bclhn,bcshn->bclsh", C, B)

    M = G * L.permute(0, 2, 3, 4, 1)

    Y_diag = torch.einsum("bclsh,bcshp->bclhp", M, hidden_states)

    decay_states = torch.exp(A_cumsum[:, :, :, -1:] - A_cumsum)
    B_decay = B * decay_states.permute(0, -2, -1, 1)[..., None]
    states = torch.einsum("bclhn,bclhp->bchpn", B_decay, hidden_states)

    previous_states = (
        initial_states[:, None].to(dtype=states.dtype, device=states.device)
        if initial_states is not None
        else torch.zeros_like(states[:, :1])
    )
    states = torch.cat([previous_states, states], dim=1)
    decay_chunk = torch.exp(segment_sum(F.pad(A_cumsum[:, :, :, -1], (1, 0)))).transpose(1, 3)
    new_states = torch.einsum("bzch,bzhpn->bchpn", decay_chunk, states)
    states, final_state = new_states[:, :-1], new_states[:, -1]

    state_decay_out = torch.exp(A_cumsum)
    C_times_states = torch.einsum("bclhn,bchpn->bclhp", C, states)
    Y_off = C_times_states * state_decay_out.permute(0, 2, 3, 1)[..., None]

    output = (Y_diag + Y_off).contiguous()
    output = output.reshape(batch_size, -1, num_heads, head_dim)

    if D_residual is not None:
        output = output + D_residual

    if pad_size > 0:
        output = output[:, :sequence_length]

    if return_final_states:
        return output, final_state

    return output


def apply_mask_to_padding_states(hidden_states, attention_mask):
    if attention_mask is not None:
        dtype = hidden_states.dtype
        hidden_states = (hidden_states * attention_mask[:, :, None]).to(dtype)

    return hidden_states


class MambaRMSNormGated(torch.nn.Module):
    def __init__(self, hidden_size, group_size, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self.variance_epsilon = eps
        self.group_size = group_size

    def forward(self, hidden_states, gate=None):
        input_dtype = hidden_states.dtype
        hidden_states = hidden_states.to(torch.float32)
        if gate is not None:
            hidden_states = hidden_states * nn.functional.silu(gate.to(torch.float32))
        *prefix_dims, last_dim = hidden_states.shape
        group_count = last_dim // self.group_size
        hidden_states_group = hidden_states.view(*prefix_dims, group_count, self.group_size)
        variance = hidden_states_group.pow(2).mean(-1, keepdim=True)
        hidden_states_group = hidden_states_group * torch.rsqrt(variance + self.variance_epsilon)
        hidden_states = hidden_states_group.view(*prefix_dims, group_count * self.group_size)
        return self.weight * hidden_states.to(input_dtype)


def mamba2_split_conv1d_scan_combined(
    zxbcdt,
    conv1d_weight,
    conv1d_bias,
    dt_bias,
    A,
    D,
    chunk_size,
    initial_states=None,
    dt_limit=(0.0, float("inf")),
    return_final_states=False,
    activation="silu",
    rmsnorm_weight=None,
    rmsnorm_eps=1e-6,
    outproj_weight=None,
    outproj_bias=None,
    headdim=None,
    ngroups=1,
    norm_before_gate=True,
    **kwargs,
):
    return None


class Mamba2Mixer(nn.Module):
    def __init__(self, config: Mamba2Config, layer_idx: int, initialize_mixer_weights: bool = True):
        super().__init__()
        self.num_heads = config.num_heads
        self.hidden_size = config.hidden_size
        self.ssm_state_size = config.state_size
        self.conv_kernel_size = config.conv_kernel
        self.intermediate_size = int(config.expand * self.hidden_size)
        self.time_step_rank = int(config.time_step_rank)
        self.layer_idx = layer_idx
        self.use_conv_bias = config.use_conv_bias
        self.activation = config.hidden_act
        self.act = ACT2FN[config.hidden_act]

        self.layer_norm_epsilon = config.layer_norm_epsilon

        self.n_groups = config.n_groups
        self.head_dim = config.head_dim
        self.chunk_size = config.chunk_size

        self.time_step_limit = config.time_step_limit
        self.time_step_min = config.time_step_min
        self.time_step_max = config.time_step_max
        self.time_step_floor = config.time_step_floor

        self.conv_dim = self.intermediate_size + 2 * self.n_groups * self.ssm_state_size
        self.conv1d = nn.Conv1d(
            in_channels=self.conv_dim,
            out_channels=self.conv_dim,
            bias=config.use_conv_bias,
            kernel_size=config.conv_kernel,
            groups=self.conv_dim,
            padding=config.conv_kernel - 1,
        )

        projection_size = self.intermediate_size + self.conv_dim + self.num_heads
        self.in_proj = nn.Linear(
            self.hidden_size,
            projection_size,
            bias=config.use_bias,
        )
        self.dt_bias = nn.Parameter(torch.empty(self.num_heads))
        self.A_log = nn.Parameter(torch.empty(self.num_heads))
        self.norm = MambaRMSNormGated(
            self.intermediate_size, group_size=self.intermediate_size // self.n_groups, eps=self.layer_norm_epsilon
        )
        self.D = nn.Parameter(torch.empty(self.num_heads))
        if initialize_mixer_weights and self.dt_bias.device.type != "meta":
            self.init_mamba2_weights()

        self.out_proj = nn.Linear(self.intermediate_size, self.hidden_size, bias=config.use_bias)
        self.use_bias = config.use_bias

        self.layer_type = config.layer_types[layer_idx]

    @torch.no_grad()
    def init_mamba2_weights(self):
        A = torch.arange(1, self.num_heads + 1, device=self.A_log.device, dtype=torch.float32)
        self.A_log.copy_(torch.log(A))
        self.D.fill_(1.0)

        dt = torch.exp(
            torch.rand(self.num_heads, device=self.dt_bias.device, dtype=torch.float32)
            * (math.log(self.time_step_max) - math.log(self.time_step_min))
            + math.log(self.time_step_min)
        ).clamp(min=self.time_step_floor)

        inv_dt = dt + torch.log(-torch.expm1(-dt))
        self.dt_bias.copy_(inv_dt)

    def forward(self, hidden_states, cache_params=None, attention_mask=None, **kwargs):
        batch_size, seq_len, _ = hidden_states.shape
        dtype = hidden_states.dtype
        if cache_params is not None:
            conv_state = cache_params.get_conv_state(self.layer_idx, state_idx=0)
            recurrent_state = cache_params.get_recurrent_state(self.layer_idx, state_idx=0)
        else:
            conv_state, recurrent_state = None, None

        # 1. Gated MLP's linear projection
        hidden_states = apply_mask_to_padding_states(hidden_states, attention_mask)
        projected_states = self.in_proj(hidden_states)

        A = -torch.exp(self.A_log.float())
        fused_kwargs = kwargs | {"dt_limit": self.time_step_limit}
        if self.training and cache_params is None:
            fused_output = mamba2_split_conv1d_scan_combined(
                projected_states,
                self.conv1d.weight.squeeze(1),
                self.conv1d.bias,
                self.dt_bias,
                A,
                D=self.D,
                chunk_size=self.chunk_size,
                activation=self.activation,
                rmsnorm_weight=self.norm.weight,
                rmsnorm_eps=self.norm.variance_epsilon,
                outproj_weight=self.out_proj.weight,
                outproj_bias=self.out_proj.bias,
                headdim=self.head_dim,
                ngroups=self.n_groups,
                norm_before_gate=False,
                return_final_states=False,
                **fused_kwargs,
            )

            if fused_output is not None:
                return fused_output

        gate, hidden_states_B_C, dt = projected_states.split(
            [self.intermediate_size, self.conv_dim, self.num_heads], dim=-1
        )

        # 2. Convolution sequence transformation
        hidden_states_B_C = hidden_states_B_C.transpose(1, 2)
        if conv_state is not None and seq_len == 1 and not cache_params.is_recording_past(self.layer_idx):
            hidden_states_B_C = causal_conv1d_update(
                hidden_states_B_C,
                conv_state,
                self.conv1d.weight.squeeze(1),
                self.conv1d.bias,
                activation=self.activation,
            )
        else:
            if cache_params is not None:
                hidden_states_B_C = cache_params.update_conv_state(
                    hidden_states_B_C,
                    self.layer_idx,
                    conv_kernel_size=self.conv_kernel_size,
                )

            hidden_states_B_C = causal_conv1d_fn(
                hidden_states_B_C,
                self.conv1d.weight.squeeze(1),
                self.conv1d.bias,
                activation=self.activation,
                **kwargs,
            )

            if cache_params is not None:
                hidden_states_B_C = hidden_states_B_C[:, :, -seq_len:]

        # 3. SSM transformation
        hidden_states_B_C = apply_mask_to_padding_states(hidden_states_B_C.transpose(1, 2), attention_mask)
        hidden_states, B, C = torch.split(
            hidden_states_B_C,
            [self.intermediate_size, self.n_groups * self.ssm_state_size, self.n_groups * self.ssm_state_size],
            dim=-1,
        )

        # Recurrent form
        if recurrent_state is not None and seq_len == 1:
            hidden_states = hidden_states.view(batch_size, self.num_heads, self.head_dim)
            dt = dt.transpose(1, 2).expand(-1, -1, self.head_dim)
            A = A[:, None, None].expand(-1, self.head_dim, self.ssm_state_size)
            B = B.view(batch_size, self.n_groups, self.ssm_state_size)
            C = C.view(batch_size, self.n_groups, self.ssm_state_size)
            D = self.D[:, None].expand(-1, self.head_dim)
            dt_bias = self.dt_bias[:, None].expand(-1, self.head_dim)

            scan_output = mamba2_selective_state_update(
                recurrent_state,
                hidden_states,
                dt,
                A,
                B,
                C,
                D,
                z=None,
                dt_bias=dt_bias,
                dt_softplus=True,
                **kwargs,
            )
            scan_output = scan_output.view(batch_size, 1, -1)
        # Chunk form
        else:
            output_final_state = cache_params is not None
            scan_result = mamba2_chunk_scan(
                hidden_states.view(batch_size, seq_len, self.num_heads, self.head_dim),
                dt,
                A,
                B.view(batch_size, seq_len, self.n_groups, self.ssm_state_size),
                C.view(batch_size, seq_len, self.n_groups, self.ssm_state_size),
                chunk_size=self.chunk_size,
                D=self.D,
                z=None,
                return_final_states=output_final_state,
                dt_bias=self.dt_bias,
                dt_softplus=True,
                initial_states=recurrent_state,
                dt_limit=self.time_step_limit,
                **kwargs,
            )

            if output_final_state:
                scan_output, final_state = scan_result
                cache_params.update_recurrent_state(final_state, layer_idx=self.layer_idx)
            else:
                scan_output = scan_result

            scan_output = scan_output.reshape(batch_size, seq_len, -1)

        scan_output = self.norm(scan_output, gate)

        # 4. Final linear projection
        contextualized_states = self.out_proj(scan_output.to(dtype))
        return contextualized_states


mixer = torch.compile(Mamba2Mixer(Mamba2Config(), layer_idx=0).eval())


def make():
    torch.manual_seed(0)
    cfg = Mamba2Config()
    m = Mamba2Mixer(cfg, layer_idx=0).eval()
    conv_dim = m.conv_dim
    x = torch.randn(2, 1, 8)
    cache = Mamba2StateCache(
        [torch.randn(2, conv_dim, cfg.conv_kernel)],
        [torch.randn(2, cfg.num_heads, cfg.head_dim, cfg.state_size)],
    )
    mask = torch.tensor([[1], [1]])
    fresh = Mamba2StateCache(
        [torch.zeros(2, conv_dim, cfg.conv_kernel)],
        [torch.zeros(2, cfg.num_heads, cfg.head_dim, cfg.state_size)],
        has_previous_state=False,
    )
    prompt = torch.randn(2, 3, 8)
    return m, [(x, cache), (x, cache, mask), (prompt, fresh)]
