"""Mamba slow_forward at v4.52.4: prefill detected by `cache_position.shape[0]` (not `cache_position[0] == 0`), Python scan loop.

Source: huggingface/transformers@v4.52.4:src/transformers/models/mamba/modeling_mamba.py:232-311
Kept: in_proj/chunk, the attention_mask multiply, the cache branch with the
shape-based prefill test (the comment explains it avoids a data-dependent
check), conv state update, x_proj split, softplus discretisation, the
`for i in range(seq_len)` recurrence, D skip and gate, cache copy_, out_proj.
Simplified: the cache is a small object with lists; hidden 4, intermediate 8,
state 4, conv kernel 4; use_mambapy off.
"""
import torch
from torch import nn


class MambaCache:
    def __init__(self, batch_size, intermediate_size, ssm_state_size, conv_kernel_size):
        self.ssm_states = [torch.zeros(batch_size, intermediate_size, ssm_state_size)]
        self.conv_states = [torch.zeros(batch_size, intermediate_size, conv_kernel_size)]

    def update_conv_state(self, layer_idx, new_conv_state, cache_position):
        conv_state = self.conv_states[layer_idx]
        cache_position = cache_position.clamp(0, conv_state.shape[-1] - 1)
        conv_state = conv_state.roll(shifts=-1, dims=-1)
        conv_state[:, :, cache_position] = new_conv_state.to(conv_state.device)
        self.conv_states[layer_idx].zero_()
        self.conv_states[layer_idx] += conv_state
        return self.conv_states[layer_idx]


class MambaMixer(nn.Module):
    def __init__(self, hidden_size=4, intermediate_size=8, ssm_state_size=4, conv_kernel=4, time_step_rank=2, layer_idx=0):
        super().__init__()
        self.layer_idx = layer_idx
        self.intermediate_size = intermediate_size
        self.ssm_state_size = ssm_state_size
        self.conv_kernel_size = conv_kernel
        self.time_step_rank = time_step_rank
        self.use_conv_bias = True
        self.use_mambapy = False
        self.conv1d = nn.Conv1d(intermediate_size, intermediate_size, conv_kernel, groups=intermediate_size, padding=conv_kernel - 1)
        self.act = nn.SiLU()
        self.in_proj = nn.Linear(hidden_size, intermediate_size * 2)
        self.x_proj = nn.Linear(intermediate_size, time_step_rank + ssm_state_size * 2, bias=False)
        self.dt_proj = nn.Linear(time_step_rank, intermediate_size)
        self.A_log = nn.Parameter(torch.log(torch.arange(1, ssm_state_size + 1, dtype=torch.float32)[None, :].expand(intermediate_size, -1).contiguous()))
        self.D = nn.Parameter(torch.ones(intermediate_size))
        self.out_proj = nn.Linear(intermediate_size, hidden_size)

    def slow_forward(self, input_states, cache_params=None, cache_position=None, attention_mask=None):
        batch_size, seq_len, _ = input_states.shape
        dtype = input_states.dtype
        projected_states = self.in_proj(input_states).transpose(1, 2)
        hidden_states, gate = projected_states.chunk(2, dim=1)
        if attention_mask is not None:
            hidden_states = hidden_states * attention_mask.unsqueeze(1)
        if cache_params is not None:
            ssm_state = cache_params.ssm_states[self.layer_idx].clone()
            ssm_state = ssm_state.to(hidden_states.device)
            # use `cache_position.shape[0]` to check whether we are in prefill
            # stage, it's equivalent to check `cache_position[0] == 0`, which
            # breaks dynamo fullgraph constraints
            if cache_position.shape[0] == self.conv_kernel_size:
                conv_state = nn.functional.pad(hidden_states, (self.conv_kernel_size - hidden_states.shape[-1], 0))
                cache_params.update_conv_state(self.layer_idx, conv_state, cache_position)
                hidden_states = self.act(self.conv1d(hidden_states)[..., :seq_len])
            else:
                conv_state = cache_params.update_conv_state(self.layer_idx, hidden_states, cache_position)
                hidden_states = torch.sum(conv_state * self.conv1d.weight[:, 0, :], dim=-1)
                if self.use_conv_bias:
                    hidden_states += self.conv1d.bias
                hidden_states = self.act(hidden_states).to(dtype).unsqueeze(-1)
        else:
            ssm_state = torch.zeros((batch_size, self.intermediate_size, self.ssm_state_size), device=hidden_states.device, dtype=dtype)
            hidden_states = self.act(self.conv1d(hidden_states)[..., :seq_len])
        if attention_mask is not None:
            hidden_states = hidden_states * attention_mask.unsqueeze(1)
        ssm_parameters = self.x_proj(hidden_states.transpose(1, 2))
        time_step, B, C = torch.split(ssm_parameters, [self.time_step_rank, self.ssm_state_size, self.ssm_state_size], dim=-1)
        discrete_time_step = self.dt_proj(time_step)
        discrete_time_step = nn.functional.softplus(discrete_time_step).transpose(1, 2)
        A = -torch.exp(self.A_log.float())
        discrete_A = torch.exp(A[None, :, None, :] * discrete_time_step[:, :, :, None])
        discrete_B = discrete_time_step[:, :, :, None] * B[:, None, :, :].float()
        deltaB_u = discrete_B * hidden_states[:, :, :, None].float()
        scan_outputs = []
        for i in range(hidden_states.shape[-1]):
            ssm_state = discrete_A[:, :, i, :] * ssm_state + deltaB_u[:, :, i, :]
            scan_output = torch.matmul(ssm_state.to(dtype), C[:, i, :].unsqueeze(-1))
            scan_outputs.append(scan_output[:, :, 0])
        scan_output = torch.stack(scan_outputs, dim=-1)
        scan_output = scan_output + (hidden_states * self.D[None, :, None])
        scan_output = scan_output * self.act(gate)
        if cache_params is not None:
            cache_params.ssm_states[self.layer_idx].copy_(ssm_state)
        return self.out_proj(scan_output.transpose(1, 2))

    def forward(self, hidden_states, cache_params=None, cache_position=None, attention_mask=None):
        return self.slow_forward(hidden_states, cache_params, cache_position, attention_mask)


mixer = torch.compile(MambaMixer())


def make():
    torch.manual_seed(0)
    cache = MambaCache(1, 8, 4, 4)
    return MambaMixer(), [(torch.randn(1, 4, 4),), (torch.randn(1, 4, 4), cache, torch.arange(4)), (torch.randn(1, 1, 4), MambaCache(1, 8, 4, 4), torch.tensor([4]))]
