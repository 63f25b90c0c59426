"""Megatron-DeepSpeed ParallelTransformerLayer with alibi attention and a KV cache: the layer picks a `@torch.jit.script` bias-dropout-add by `self.training`, calls it under `torch.enable_grad()`, and the attention slices a prebuilt alibi tensor into `baddbmm`.

Source: bigscience-workshop/Megatron-DeepSpeed@06dc2d7f13e805340a720730a5e69e8efc5a573c:megatron/model/transformer.py:200-520
Kept: ParallelAttention.forward's self-attention path (layer_past concat,
get_key_value presents, alibi slice as baddbmm input, inference mask
slicing), bias_dropout_add / get_bias_dropout_add / the two jit-scripted
fused variants, ParallelTransformerLayer.forward (encoder type) and
ParallelTransformer._build_alibi_tensor verbatim.
Simplified: tensor-parallel linears are nn.Linear wrapped to return
(output, bias) like RowParallelLinear(skip_bias_add=True); the softmax is
FusedScaleMaskSoftmax's torch path inlined (mask_func + softmax); no RNG
tracker; hidden 8, 2 heads, no rotary.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class LinearWithBias(nn.Module):
    """Stands in for Column/RowParallelLinear: returns (output, bias)."""

    def __init__(self, in_features, out_features, skip_bias_add=False):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(out_features, in_features) * 0.1)
        self.bias = nn.Parameter(torch.zeros(out_features))
        self.skip_bias_add = skip_bias_add

    def forward(self, input_):
        bias = self.bias if not self.skip_bias_add else None
        output = F.linear(input_, self.weight, bias)
        output_bias = self.bias if self.skip_bias_add else None
        return output, output_bias


def attention_mask_func(attention_scores, attention_mask):
    attention_scores.masked_fill_(attention_mask, -10000.0)
    return attention_scores


class ParallelAttention(nn.Module):
    def __init__(self, hidden_size, num_attention_heads, layer_number, attention_dropout):
        super().__init__()
        self.layer_number = max(1, layer_number)
        self.hidden_size_per_partition = hidden_size
        self.hidden_size_per_attention_head = hidden_size // num_attention_heads
        self.num_attention_heads_per_partition = num_attention_heads
        self.query_key_value = LinearWithBias(hidden_size, 3 * hidden_size)
        coeff = self.layer_number
        self.norm_factor = math.sqrt(self.hidden_size_per_attention_head) * coeff
        self.attention_dropout = nn.Dropout(attention_dropout)
        self.dense = LinearWithBias(hidden_size, hidden_size, skip_bias_add=True)

    def scale_mask_softmax(self, input, mask):
        mask_output = attention_mask_func(input, mask) if mask is not None else input
        return torch.nn.Softmax(dim=-1)(mask_output)

    def forward(self, hidden_states, attention_mask, layer_past=None,
                get_key_value=False, encoder_output=None, alibi=None):
        # hidden_states: [sq, b, h]

        # Attention heads [sq, b, h] --> [sq, b, (np * 3 * hn)]
        mixed_x_layer, _ = self.query_key_value(hidden_states)

        # [sq, b, (np * 3 * hn)] --> [sq, b, np, 3 * hn]
        new_tensor_shape = mixed_x_layer.size()[:-1] + \
            (self.num_attention_heads_per_partition,
             3 * self.hidden_size_per_attention_head)
        mixed_x_layer = mixed_x_layer.view(*new_tensor_shape)

        # [sq, b, np, 3 * hn] --> 3 [sq, b, np, hn]
        (query_layer,
         key_layer,
         value_layer) = torch.split(mixed_x_layer, self.hidden_size_per_attention_head, dim=-1)

        # ==================================
        # Adjust key and value for inference
        # ==================================

        if layer_past is not None:
            past_key, past_value = layer_past
            key_layer = torch.cat((past_key.type_as(key_layer),
                                   key_layer), dim=0)
            value_layer = torch.cat((past_value.type_as(value_layer),
                                     value_layer), dim=0)
        if get_key_value:
            present = (key_layer, value_layer)

        # [b, np, sq, sk]
        output_size = (query_layer.size(1),
                       query_layer.size(2),
                       query_layer.size(0),
                       key_layer.size(0))

        # [sq, b, np, hn] -> [sq, b * np, hn]
        query_layer = query_layer.reshape(output_size[2],
                                          output_size[0] * output_size[1], -1)
        # [sk, b, np, hn] -> [sk, b * np, hn]
        key_layer = key_layer.reshape(output_size[3],
                                      output_size[0] * output_size[1], -1)

        # preallocting result tensor: [b * np, sq, sk]
        if alibi is None:
            matmul_result = torch.empty(
                output_size[0]*output_size[1],
                output_size[2],
                output_size[3],
                dtype=query_layer.dtype,
                device=query_layer.device)
        else:
            matmul_result = alibi[:output_size[0]*output_size[1], :, :output_size[3]]

        # Raw attention scores. [b * np, sq, sk]
        matmul_result = torch.baddbmm(
            matmul_result,
            query_layer.transpose(0, 1),   # [b * np, sq, hn]
            key_layer.transpose(0, 1).transpose(1, 2),  # [b * np, hn, sk]
            beta=0.0 if alibi is None else 1.0, alpha=(1.0/self.norm_factor))

        # change view to [b, np, sq, sk]
        attention_scores = matmul_result.view(*output_size)

        # ==================================================
        # Update attention mask for inference. [b, np, sq, sk]
        # ==================================================

        if get_key_value:
            with torch.no_grad():
                if layer_past is not None:
                    attention_mask = attention_mask[
                        ...,
                        attention_scores.size(3) - 1,
                        :attention_scores.size(3)].unsqueeze(2)
                else:
                    attention_mask = attention_mask[
                        ...,
                        :attention_scores.size(3),
                        :attention_scores.size(3)]

        attention_probs = self.scale_mask_softmax(attention_scores,
                                                  attention_mask)
        attention_probs = self.attention_dropout(attention_probs)

        # [sk, b, np, hn] --> [b, np, sq, hn]
        output_size = (value_layer.size(1),
                       value_layer.size(2),
                       query_layer.size(0),
                       value_layer.size(3))

        # change view [sk, b * np, hn]
        value_layer = value_layer.reshape(value_layer.size(0),
                                          output_size[0] * output_size[1], -1)

        # change view [b * np, sq, sk]
        attention_probs = attention_probs.view(output_size[0] * output_size[1],
                                               output_size[2], -1)

        # matmul: [b * np, sq, hn]
        context_layer = torch.bmm(attention_probs, value_layer.transpose(0, 1))

        # change view [b, np, sq, hn]
        context_layer = context_layer.view(*output_size)

        # [b, np, sq, hn] --> [sq, b, np, hn]
        context_layer = context_layer.permute(2, 0, 1, 3).contiguous()

        # [sq, b, np, hn] --> [sq, b, hp]
        new_context_layer_shape = context_layer.size()[:-2] + \
            (self.hidden_size_per_partition,)
        context_layer = context_layer.view(*new_context_layer_shape)

        output, bias = self.dense(context_layer)

        if get_key_value:
            output = [output, present]

        return output, bias


def bias_dropout_add(x, bias, residual, prob, training):
    # type: (Tensor, Tensor, Tensor, float, bool) -> Tensor
    out = torch.nn.functional.dropout(x + bias, p=prob, training=training)
    out = residual + out
    return out


def get_bias_dropout_add(training):
    def _bias_dropout_add(x, bias, residual, prob):
        return bias_dropout_add(x, bias, residual, prob, training)
    return _bias_dropout_add


@torch.jit.script
def bias_dropout_add_fused_train(x, bias, residual, prob):
    # type: (Tensor, Tensor, Tensor, float) -> Tensor
    return bias_dropout_add(x, bias, residual, prob, True)


@torch.jit.script
def bias_dropout_add_fused_inference(x, bias, residual, prob):
    # type: (Tensor, Tensor, Tensor, float) -> Tensor
    return bias_dropout_add(x, bias, residual, prob, False)


class ParallelMLP(nn.Module):
    def __init__(self, hidden_size):
        super().__init__()
        self.dense_h_to_4h = LinearWithBias(hidden_size, 4 * hidden_size)
        self.dense_4h_to_h = LinearWithBias(4 * hidden_size, hidden_size, skip_bias_add=True)

    def forward(self, hidden_states):
        intermediate_parallel, _ = self.dense_h_to_4h(hidden_states)
        intermediate_parallel = F.gelu(intermediate_parallel)
        output, output_bias = self.dense_4h_to_h(intermediate_parallel)
        return output, output_bias


class Args:
    hidden_size = 8
    num_attention_heads = 2
    attention_dropout = 0.1
    hidden_dropout = 0.1
    layernorm_epsilon = 1e-5
    apply_residual_connection_post_layernorm = False
    bias_dropout_fusion = True
    bf16 = False
    fp32_residual_connection = False
    seq_length = 8
    micro_batch_size = 2


class ParallelTransformerLayer(nn.Module):
    def __init__(self, args, layer_number):
        super().__init__()
        self.layer_number = layer_number
        self.apply_residual_connection_post_layernorm \
            = args.apply_residual_connection_post_layernorm
        self.bf16 = args.bf16
        self.fp32_residual_connection = args.fp32_residual_connection

        # Layernorm on the input data.
        self.input_layernorm = nn.LayerNorm(args.hidden_size, eps=args.layernorm_epsilon)

        # Self attention.
        self.self_attention = ParallelAttention(args.hidden_size, args.num_attention_heads,
                                                layer_number, args.attention_dropout)
        self.hidden_dropout = args.hidden_dropout
        self.bias_dropout_fusion = args.bias_dropout_fusion

        # Layernorm on the attention output
        self.post_attention_layernorm = nn.LayerNorm(args.hidden_size, eps=args.layernorm_epsilon)

        # MLP
        self.mlp = ParallelMLP(args.hidden_size)

    def forward(self, hidden_states, attention_mask,
                encoder_output=None, enc_dec_attn_mask=None,
                layer_past=None, get_key_value=False, alibi=None):
        # hidden_states: [b, s, h]

        # Layer norm at the beginning of the transformer layer.
        layernorm_output = self.input_layernorm(hidden_states)
        # Self attention.
        attention_output, attention_bias = \
            self.self_attention(layernorm_output,
                                attention_mask,
                                layer_past=layer_past,
                                get_key_value=get_key_value,
                                alibi=alibi)

        if get_key_value:
            attention_output, presents = attention_output

        # Residual connection.
        if self.apply_residual_connection_post_layernorm:
            residual = layernorm_output
        else:
            residual = hidden_states

        # jit scripting for a nn.module (with dropout) is not
        # trigerring the fusion kernel. For now, we use two
        # different nn.functional routines to account for varying
        # dropout semantics during training and inference phases.
        if self.bias_dropout_fusion:
            if self.training:
                bias_dropout_add_func = bias_dropout_add_fused_train
            else:
                bias_dropout_add_func = bias_dropout_add_fused_inference
        else:
            bias_dropout_add_func = get_bias_dropout_add(self.training)

        # re-enable torch grad to enable fused optimization.
        with torch.enable_grad():
            layernorm_input = bias_dropout_add_func(
                attention_output,
                attention_bias.expand_as(residual),
                residual,
                self.hidden_dropout)

        # Layer norm post the self attention.
        layernorm_output = self.post_attention_layernorm(layernorm_input)

        # MLP.
        mlp_output, mlp_bias = self.mlp(layernorm_output)

        # Second residual connection.
        if self.apply_residual_connection_post_layernorm:
            residual = layernorm_output
        else:
            residual = layernorm_input

        # re-enable torch grad to enable fused optimization.
        with torch.enable_grad():
            output = bias_dropout_add_func(
                mlp_output,
                mlp_bias.expand_as(residual),
                residual,
                self.hidden_dropout)

        if get_key_value:
            output = [output, presents]

        return output


def _build_alibi_tensor(max_seq_len, num_attention_heads, batch_size):
    """Returns tensor shaped (batch_size * num_attention_heads, 1, max_seq_len)"""
    def get_slopes(n):
        def get_slopes_power_of_2(n):
            start = (2 ** (-2 ** -(math.log2(n) - 3)))
            ratio = start
            return [start * ratio ** i for i in range(n)]

        if math.log2(n).is_integer():
            return get_slopes_power_of_2(n)
        else:
            closest_power_of_2 = 2 ** math.floor(math.log2(n))
            return get_slopes_power_of_2(closest_power_of_2) + get_slopes(2 * closest_power_of_2)[0::2][
                                                               :n - closest_power_of_2]
    slopes = torch.Tensor(get_slopes(num_attention_heads))
    alibi = slopes.unsqueeze(1).unsqueeze(1) * torch.arange(max_seq_len).unsqueeze(0).unsqueeze(0).expand(num_attention_heads, -1, -1)
    alibi = alibi.repeat(batch_size, 1, 1)
    return alibi


layer = torch.compile(ParallelTransformerLayer(Args(), layer_number=1).eval())


def make():
    torch.manual_seed(0)
    args = Args()
    model = ParallelTransformerLayer(args, layer_number=1).eval()
    s, b = 5, 2
    causal = torch.triu(torch.ones(1, 1, args.seq_length, args.seq_length, dtype=torch.bool), diagonal=1)
    alibi = _build_alibi_tensor(args.seq_length, args.num_attention_heads, b)
    hidden = torch.randn(s, b, args.hidden_size)
    past = torch.randn(2, 3, b, args.num_attention_heads, args.hidden_size // args.num_attention_heads)
    step = torch.randn(1, b, args.hidden_size)
    return model, [
        (hidden, causal[..., :s, :s]),
        (hidden, causal, None, None, None, True, alibi),
        (step, causal, None, None, past, True, alibi),
    ]
