"""LLaMA-MoE switch routing: SwitchBalancedGate (gumbel noise, bincount load, `load.tolist()` in the gate output) and SwitchDropTokenCalculator dropping tokens over capacity with `nonzero`, `numel() > capacity`, `randperm`.

Source: pjlab-sys4nlp/llama-moe@b17aff436cce58e2fcd7327789c7fadafe15d19e:smoe/modules/moe/moe_calculators.py:142-230
Also: smoe/modules/moe/moe_gates.py:421-487 (SwitchBalancedGate), smoe/modules/moe/moe_layers.py:35-308
(BaseMoELayer.forward, LinearGLUMoELayer), smoe/modules/moe/moe_experts.py:52-184 (LinearGLUExperts),
deepspeed/moe/sharded_moe.py gumbel_rsample (the gate imports it; copied as it is there).
Kept: the gate dict passed as **kwargs into the calculator (its expert_batch_size list unused
there), the per-expert loop with capacity dropping, `y[token_indices, :] = expert_output`,
the dropped_padding branch, the num_dropped_tokens tensor.
Simplified: transformers ModelOutput -> plain dataclasses, ACT2FN -> {"silu": nn.SiLU()},
_create_gate/_create_calculator keep only the Switch branches, no WeightNorm option;
4 experts of hidden 4, input 8.
"""
import math
import warnings
from dataclasses import dataclass
from typing import Callable, Dict, Optional, Tuple, Union

import torch
import torch.nn.functional as F
from torch import nn
from torch.distributions.normal import Normal

# transformers.activations.ACT2FN stand-in
ACT2FN = {"silu": nn.SiLU()}

# deepspeed.moe.sharded_moe.gumbel_rsample
gumbel_map: Dict[torch.device, Callable] = {}


def gumbel_rsample(shape: Tuple, device: torch.device) -> torch.Tensor:
    gumbel = gumbel_map.get(device)
    if gumbel is None:
        one = torch.tensor(1.0, device=device)
        zero = torch.tensor(0.0, device=device)
        gumbel = torch.distributions.gumbel.Gumbel(zero, one).rsample  # type: ignore
        gumbel_map[device] = gumbel
    return gumbel(shape)


valid_gate_type = ("linear", "mlp")


def get_gate_network(gate_type, input_size, num_experts):
    gate_type = gate_type.lower()

    if gate_type == "linear":
        gate_network = nn.Linear(input_size, num_experts, bias=False)
        nn.init.zeros_(gate_network.weight)
    elif gate_type == "mlp":
        gate_network = torch.nn.Sequential(
            torch.nn.Linear(input_size, num_experts, bias=False),
            torch.nn.Tanh(),
            torch.nn.Linear(num_experts, num_experts, bias=False),
        )
    else:
        raise ValueError(f'Expected "gate_type" in {valid_gate_type}, got {gate_type}.')

    return gate_network


class BaseGate(nn.Module):
    def __init__(self):
        super(BaseGate, self).__init__()

    def reset_gate_network(self):
        if "gate_network_type" not in vars(self):
            raise KeyError(f"{type(self)} does not have a gate network.")
        else:
            self.gate_network = get_gate_network(
                self.gate_network_type, self.input_size, self.num_experts
            )


class LinearGLUExperts(nn.Module):
    """
    Modified from transformers.models.llama.modeling_llama.LlamaMLP
    """

    __constants__ = [
        "bias",
        "in_features",
        "hidden_features",
        "out_features",
        "hidden_act",
        "num_experts",
        "size_experts",
    ]

    def __init__(
        self,
        in_features,
        hidden_features,
        out_features,
        hidden_act,
        num_experts,
        size_experts=None,
        bias=True,
        device=None,
        dtype=None,
    ):
        factory_kwargs = {"device": device, "dtype": dtype}
        super(LinearGLUExperts, self).__init__()
        self.in_features = in_features
        self.hidden_features = hidden_features
        self.out_features = out_features
        self.hidden_act = hidden_act
        self.num_experts = num_experts

        if size_experts is None:
            # all experts share the same number of hidden neurons
            assert hidden_features % num_experts == 0
            size_per_expert = hidden_features // num_experts
            size_experts = [size_per_expert for _ in range(num_experts)]
        else:
            # use specified expert sizes
            assert (
                len(size_experts) == num_experts
                and sum(size_experts) == hidden_features
            )
        self.size_experts = size_experts

        self.act_fn = ACT2FN[hidden_act]

        self.weight_gate = nn.ParameterList()
        self.weight_up = nn.ParameterList()
        self.weight_down = nn.ParameterList()

        for i in range(num_experts):
            this_expert_weight_gate = nn.Parameter(
                torch.empty((size_experts[i], in_features), **factory_kwargs)
            )
            this_expert_weight_up = nn.Parameter(
                torch.empty((size_experts[i], in_features), **factory_kwargs)
            )
            this_expert_weight_down = nn.Parameter(
                torch.empty((out_features, size_experts[i]), **factory_kwargs)
            )
            self.weight_gate.append(this_expert_weight_gate)
            self.weight_up.append(this_expert_weight_up)
            self.weight_down.append(this_expert_weight_down)

        if bias:
            self.bias_gate = nn.ParameterList()
            self.bias_up = nn.ParameterList()
            self.bias_down = nn.ParameterList()

            for i in range(num_experts):
                this_expert_bias_gate = nn.Parameter(
                    torch.empty((size_experts[i],), **factory_kwargs)
                )
                this_expert_bias_up = nn.Parameter(
                    torch.empty((size_experts[i],), **factory_kwargs)
                )
                this_expert_bias_down = nn.Parameter(
                    torch.empty((out_features,), **factory_kwargs)
                )
                self.bias_gate.append(this_expert_bias_gate)
                self.bias_up.append(this_expert_bias_up)
                self.bias_down.append(this_expert_bias_down)
        else:
            self.register_parameter("bias_gate", None)
            self.register_parameter("bias_up", None)
            self.register_parameter("bias_down", None)

        self.reset_parameters()

    def reset_parameters(self):
        for i in range(self.num_experts):
            nn.init.kaiming_uniform_(self.weight_gate[i], a=math.sqrt(5))
            nn.init.kaiming_uniform_(self.weight_up[i], a=math.sqrt(5))
            nn.init.kaiming_uniform_(self.weight_down[i], a=math.sqrt(5))
            if self.bias_gate is not None:
                fan_in, _ = nn.init._calculate_fan_in_and_fan_out(self.weight_gate[i])
                bound = 1 / math.sqrt(fan_in)
                nn.init.uniform_(self.bias_gate[i], -bound, bound)
            if self.bias_up is not None:
                fan_in, _ = nn.init._calculate_fan_in_and_fan_out(self.weight_up[i])
                bound = 1 / math.sqrt(fan_in)
                nn.init.uniform_(self.bias_up[i], -bound, bound)
            if self.bias_down is not None:
                fan_in, _ = nn.init._calculate_fan_in_and_fan_out(self.weight_down[i])
                bound = 1 / math.sqrt(fan_in)
                nn.init.uniform_(self.bias_down[i], -bound, bound)

    def forward(self, input, i):
        gate = self.act_fn(
            F.linear(
                input,
                self.weight_gate[i],
                self.bias_gate[i] if self.bias_gate is not None else None,
            )
        )
        up = F.linear(
            input,
            self.weight_up[i],
            self.bias_up[i] if self.bias_up is not None else None,
        )
        down = F.linear(
            gate * up,
            self.weight_down[i],
            self.bias_down[i] if self.bias_down is not None else None,
        )
        return down


@dataclass
class CalculatorOutput:  # transformers.utils.ModelOutput upstream
    hidden_states: Optional[torch.FloatTensor] = None
    num_dropped_tokens: Optional[int] = None


class BaseCalculator(nn.Module):
    def __init__(self):
        super(BaseCalculator, self).__init__()

    def reset_experts(self):
        self.experts.reset_parameters()


@dataclass
class MoEMlpOutput:  # transformers.utils.ModelOutput upstream
    hidden_states: Optional[torch.FloatTensor] = None
    balance_loss: Optional[torch.FloatTensor] = None
    num_dropped_tokens: Optional[int] = None
    gate_load: Optional[list] = None
    gate_importance: Optional[list] = None


class SwitchBalancedGate(BaseGate):
    """
    Select 1 expert each time, with a learnable gate_network controlling expert scores.
    https://arxiv.org/pdf/2101.03961.pdf
    """

    def __init__(
        self,
        input_size,
        num_experts,
        num_selects,
        gate_network="mlp",
        use_softmax=True,
        use_balance=True,
        balance_loss_weight=1e-2,
        add_noise=True,
    ):
        super(SwitchBalancedGate, self).__init__()
        assert num_selects in (1, 2)
        self.input_size = input_size
        self.num_experts = num_experts
        self.num_selects = num_selects

        self.gate_network_type = gate_network
        self.gate_network = get_gate_network(gate_network, input_size, num_experts)

        self.use_softmax = use_softmax
        self.softmax = nn.Softmax(1)

        self.use_balance = use_balance
        self.balance_loss_weight = balance_loss_weight
        self.add_noise = add_noise

    # fmt: off
    def forward(self, x):
        batch_size = x.shape[0]
        logits = self.gate_network(x)  # shape(batch_size, num_experts)
        scores = self.softmax(logits) if self.use_softmax else logits
        if self.add_noise:
            # .to(logits) to make sure the noise is in the same dtype as logits
            #   (e.g. bfloat16) while the default type is float32
            logits_w_noise = logits + gumbel_rsample(logits.shape, device=logits.device).to(logits)
        else:
            logits_w_noise = logits
        top1_scores, top1_indices = torch.max(logits_w_noise, dim=1)

        """balance loss"""
        importance_mean = scores.mean(0)  # shape(num_experts)

        load = top1_indices.bincount(minlength=self.num_experts)
        assert load.shape[0] == self.num_experts
        load_mean = load / batch_size  # shape(num_experts)

        balance_loss = self.num_experts * torch.sum(importance_mean * load_mean)
        balance_loss *= self.balance_loss_weight

        return {
            "topK_indices": top1_indices,
            "topK_scores": top1_scores,
            "expert_batch_size": load.tolist(),
            "balance_loss": balance_loss,
            "load": load_mean,
            "importance": importance_mean,
        }
    # fmt: on


class SwitchDropTokenCalculator(BaseCalculator):
    """
    https://arxiv.org/pdf/2101.03961.pdf
    """

    def __init__(
        self,
        experts,
        multiply_gate_scores=True,
        score_scale_factor=1.0,
        drop_tokens=True,
        dropped_padding="zero",  # zero input
        capacity_factor=1.25,
        add_weight_norm: bool = False,
    ):
        super(SwitchDropTokenCalculator, self).__init__()
        self.available_dropped_padding_choices = ("zero", "input")
        assert dropped_padding in self.available_dropped_padding_choices
        if drop_tokens and dropped_padding != "zero":
            assert experts.in_features == experts.out_features

        self.experts = experts
        self.multiply_gate_scores = multiply_gate_scores
        self.score_scale_factor = score_scale_factor
        self.num_experts = experts.num_experts
        self.out_features = experts.out_features
        self.mlp_norm = None

        # capacity
        self.drop_tokens = drop_tokens
        self.dropped_padding = dropped_padding
        self.capacity_factor = capacity_factor

    def forward(self, x, topK_indices, topK_scores, **kwargs) -> CalculatorOutput:
        """
        Args:
            x: (bsz*seq_len, hidden_size) bsz*seq_len is the total number of tokens in this batch
            topK_indices: (bsz*seq_len,) each element represents the expert idx to consume the token
                e.g. topK_indices[1] = 3 means the token-1 is assigned to expert-3
        """
        batch_size = topK_indices.size(0)
        capacity = int(self.capacity_factor * batch_size / self.num_experts)
        dropped_indices = []
        y = torch.zeros((batch_size, self.out_features), device=x.device, dtype=x.dtype)

        num_dropped_tokens = -1
        for i in range(self.num_experts):
            # token_indices is a tensor of (num_tokens_in_this_expert,)
            #   where each element denotes the token position idx
            token_indices = (topK_indices == i).nonzero(as_tuple=True)[0]
            num_assigned_tokens = token_indices.numel()
            # Ignore if the expert is not over capacity
            if self.drop_tokens and num_assigned_tokens > capacity:
                shuffled_indices = torch.randperm(num_assigned_tokens, device=x.device)
                # Shuffle indexes before dropping
                token_indices = token_indices[shuffled_indices]
                # Collect the tokens over capacity as dropped tokens
                dropped_indices.append(token_indices[capacity:])
                # Keep only the tokens upto the capacity of the expert
                token_indices = token_indices[:capacity]
                num_dropped_tokens = num_assigned_tokens - capacity

            if num_assigned_tokens > 0:
                expert_output = self.experts(x[token_indices, :], i)
                y[token_indices, :] = expert_output

        if self.dropped_padding == "input" and len(dropped_indices) > 0:
            dropped_indices = torch.cat(dropped_indices, dim=0)
            y[dropped_indices, :] = x[dropped_indices, :]

        if self.multiply_gate_scores:
            y = torch.mul(y, topK_scores.reshape(-1, 1) * self.score_scale_factor)
            if self.mlp_norm is not None:
                y = self.mlp_norm(y)

        return CalculatorOutput(
            hidden_states=y, num_dropped_tokens=torch.tensor(num_dropped_tokens)
        )


class BaseMoELayer(nn.Module):
    def __init__(self):
        super(BaseMoELayer, self).__init__()

    def _create_gate(self, **kwargs):
        self.gate_type = kwargs.get("gate_type", "TopKBalancedNoisyGate")

        if self.gate_type == "SwitchBalancedGate":  # switch gate
            self.gate = SwitchBalancedGate(
                self.input_size,
                self.num_experts,
                self.num_selects,
                gate_network=kwargs.get("gate_network", "mlp"),
                use_softmax=kwargs.get("gate_use_softmax", True),
                use_balance=kwargs.get("gate_use_balance", True),
                balance_loss_weight=kwargs.get("gate_balance_loss_weight", 1e-2),
                add_noise=kwargs.get("gate_add_noise", True),
            )
        else:
            raise NotImplementedError

    def _create_calculator(self, experts, **kwargs):
        self.calculator_type = kwargs.get("calculator_type", "UniversalCalculator")

        if self.calculator_type == "SwitchDropTokenCalculator":  # switch calculator
            self.calculator = SwitchDropTokenCalculator(
                experts,
                multiply_gate_scores=kwargs.get("multiply_gate_scores", True),
                score_scale_factor=kwargs.get("score_scale_factor", 1.0),
                drop_tokens=kwargs.get("drop_tokens", True),
                dropped_padding=kwargs.get("dropped_padding", "zero"),
                capacity_factor=kwargs.get("capacity_factor", 1.25),
                add_weight_norm=kwargs.get("add_weight_norm", False),
            )
        else:
            raise NotImplementedError

    def forward(self, x) -> MoEMlpOutput:
        original_shape = x.shape[:-1]
        x = x.reshape(-1, self.input_size)
        # shape(batch_size*seq_len, input_size)

        gate_outputs: dict = self.gate(x)
        calc_outs: CalculatorOutput = self.calculator(x, **gate_outputs)
        y = calc_outs.hidden_states
        y = y.reshape(original_shape + (self.output_size,))
        # shape(batch_size, seq_len, output_size)

        return MoEMlpOutput(
            hidden_states=y,
            balance_loss=gate_outputs.get("balance_loss"),
            num_dropped_tokens=calc_outs.num_dropped_tokens,
            gate_load=gate_outputs.get("load", torch.tensor(-1)),
            gate_importance=gate_outputs.get("importance", torch.tensor(-1)),
        )


class LinearGLUMoELayer(BaseMoELayer):
    def __init__(
        self,
        input_size,
        hidden_size,
        output_size,
        hidden_act,
        num_experts,
        num_selects,
        size_experts=None,
        bias=True,
        **kwargs,
    ):
        # fmt: off
        super(LinearGLUMoELayer, self).__init__()
        assert (num_selects <= num_experts)
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.output_size = output_size
        self.hidden_act = hidden_act
        self.num_experts = num_experts
        self.num_selects = num_selects
        self.size_experts = size_experts
        self.bias = bias

        experts = LinearGLUExperts(
            input_size,
            hidden_size,
            output_size,
            hidden_act,
            num_experts,
            size_experts=size_experts,
            bias=bias
        )

        self._create_gate(**kwargs)
        self._create_calculator(experts, **kwargs)
        # fmt: on


def build_switch_mlp():
    layer = LinearGLUMoELayer(
        input_size=8, hidden_size=16, output_size=8, hidden_act="silu",
        num_experts=4, num_selects=1, bias=True,
        gate_type="SwitchBalancedGate", calculator_type="SwitchDropTokenCalculator",
        gate_network="mlp", gate_use_softmax=True, gate_use_balance=True,
        gate_balance_loss_weight=1e-2, gate_add_noise=True,
        multiply_gate_scores=True, score_scale_factor=1.0,
        drop_tokens=True, dropped_padding="zero", capacity_factor=1.25,
    )
    return layer


def train_step_model():
    return torch.compile(build_switch_mlp())


def make():
    torch.manual_seed(0)
    layer = build_switch_mlp()
    layer.train()
    # 12 tokens over 4 experts: capacity 3; gumbel noise makes some experts overflow
    x = torch.randn(3, 4, 8)
    return layer, [(x,), (torch.randn(1, 2, 8),)]
