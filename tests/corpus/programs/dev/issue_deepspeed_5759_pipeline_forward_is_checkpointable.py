"""DeepSpeed PipelineModule.forward before the fix: `_is_checkpointable(funcs)` called per checkpoint interval.

Source: deepspeedai/DeepSpeed#5759 (https://github.com/deepspeedai/DeepSpeed/pull/5759)
The PR: "the is_checkpointable function which is called in the engine's forward
function ... creates a graph break when using torch.compile"; the fix precomputes
`is_checkpointable_results` before forward. Translated from
deepspeedai/DeepSpeed@12e65a6b:deepspeed/runtime/pipe/module.py (PipelineModule.forward
with exec_range_func/exec_func, _is_checkpointable, the LayerSpec build loop),
with forward restored to the pre-fix shape the PR diff removes
(`if self._is_checkpointable(funcs):` inside the interval loop).
Kept: micro_offset bookkeeping, the closure-returning exec_range_func, the
single-tensor unwrap, tuple wrapping of x, functional (lambda) layers in
forward_funcs, the three-way _is_checkpointable.
Simplified: no topology/partitioning/tied layers/process groups (one stage owns
all layers); seed_layers False (ds_utils.set_random_seed is written as
torch.manual_seed on that unused path); DeepSpeed's activation_checkpoint_func
(deepspeed.checkpointing.checkpoint) is replaced by
torch.utils.checkpoint.checkpoint(use_reentrant=True), the reentrant
autograd.Function that DeepSpeed's CheckpointFunction copies (its exec_func
still writes `self.curr_layer` inside the checkpointed region, as upstream);
5 layers of width 8.
"""
import functools

import torch
import torch.nn as nn


class LayerSpec:
    def __init__(self, typename, *module_args, **module_kwargs):
        self.typename = typename
        self.module_args = module_args
        self.module_kwargs = module_kwargs

        if not issubclass(typename, nn.Module):
            raise RuntimeError('LayerSpec only supports torch.nn.Module types.')

    def build(self, log=False):
        return self.typename(*self.module_args, **self.module_kwargs)


class PipelineModule(nn.Module):
    def __init__(self, layers, loss_fn=None, seed_layers=False, seed_fn=None, base_seed=1234,
                 activation_checkpoint_interval=0, activation_checkpoint_func=None, checkpointable_layers=None):
        super().__init__()
        self.loss_fn = loss_fn
        self.checkpointable_layers = checkpointable_layers
        self.seed_layers = seed_layers
        self.seed_fn = seed_fn
        self.base_seed = base_seed
        self.micro_offset = 0
        self._layer_specs = list(layers)
        self._num_layers = len(self._layer_specs)
        self._local_start = 0
        self._local_stop = None
        self.forward_funcs = []
        self.fwd_map = {}
        self._build()
        self.activation_checkpoint_interval = activation_checkpoint_interval
        self.activation_checkpoint_func = activation_checkpoint_func

    def _build(self):
        specs = self._layer_specs

        for local_idx, layer in enumerate(specs[self._local_start:self._local_stop]):
            layer_idx = local_idx + self._local_start

            # LayerSpec objects contain an nn.Module that should be allocated now.
            if isinstance(layer, nn.Module):
                name = str(layer_idx)
                self.forward_funcs.append(layer)
                self.fwd_map.update({name: len(self.forward_funcs) - 1})
                self.add_module(name, layer)

            # LayerSpec objects contain an nn.Module that should be allocated now.
            elif isinstance(layer, LayerSpec):
                module = layer.build()
                name = str(layer_idx)
                self.forward_funcs.append(module)
                self.fwd_map.update({name: len(self.forward_funcs) - 1})
                self.add_module(name, module)

            # Last option: layer may be a functional (e.g., lambda). We do nothing in
            # that case and just use it in forward()
            else:
                self.forward_funcs.append(layer)

    def forward(self, forward_input):
        # We need to offset the seed by the microbatch ID. Save it in a local var to
        # ensure it is preserved in the closure. Otherwise checkpointed forward funcs
        # will see a different offset.
        self.micro_offset += 1

        def exec_range_func(start, end):
            ''' Helper function to be used with checkpoint()
            Adapted from torch.utils.checkpoint:checkpoint_sequential()
            '''
            local_micro_offset = self.micro_offset + 1

            def exec_func(*inputs):
                # Single tensor inputs need to be unwrapped
                if len(inputs) == 1:
                    inputs = inputs[0]
                for idx, layer in enumerate(self.forward_funcs[start:end]):
                    self.curr_layer = idx + self._local_start
                    if self.seed_layers:
                        new_seed = (self.base_seed * local_micro_offset) + self.curr_layer
                        if self.seed_fn:
                            self.seed_fn(new_seed)
                        else:
                            torch.manual_seed(new_seed)

                    inputs = layer(inputs)
                return inputs

            return exec_func

        if self.activation_checkpoint_interval == 0:
            func = exec_range_func(0, len(self.forward_funcs))
            x = func(forward_input)
        else:
            num_layers = len(self.forward_funcs)
            x = forward_input
            for start_idx in range(0, num_layers, self.activation_checkpoint_interval):
                end_idx = min(start_idx + self.activation_checkpoint_interval, num_layers)

                funcs = self.forward_funcs[start_idx:end_idx]
                # Since we either pass tensors or tuples of tensors without unpacking, we
                # need to be careful not to double-wrap tensors with tuple.
                if not isinstance(x, tuple):
                    x = (x, )

                if self._is_checkpointable(funcs):
                    x = self.activation_checkpoint_func(exec_range_func(start_idx, end_idx), *x)
                else:
                    x = exec_range_func(start_idx, end_idx)(*x)
        return x

    def _is_checkpointable(self, funcs):
        # This is an unfortunate hack related to torch and deepspeed activation checkpoint implementations.
        # Some layers like torch.nn.Embedding will not receive grads if checkpointed, which breaks things.
        # I presume it's related to the discrete inputs that cannot require_grad? Need to revisit.
        if self.__class__.__name__ in ('GPTModelPipe', 'GPT2ModelPipe'):
            return all('ParallelTransformerLayerPipe' in f.__class__.__name__ for f in funcs)
        if self.checkpointable_layers is not None:
            return all(f.__class__.__name__ in self.checkpointable_layers for f in funcs)

        params = [f.parameters() for f in funcs if isinstance(f, torch.nn.Module)]
        return any(len(list(p)) > 0 for p in params)


def build_pipe():
    layers = [
        LayerSpec(nn.Linear, 8, 8),
        lambda x: torch.nn.functional.gelu(x),
        LayerSpec(nn.Linear, 8, 8),
        LayerSpec(nn.LayerNorm, 8),
        LayerSpec(nn.Linear, 8, 4),
    ]
    return PipelineModule(
        layers=layers,
        activation_checkpoint_interval=2,
        activation_checkpoint_func=functools.partial(torch.utils.checkpoint.checkpoint, use_reentrant=True),
    )


pipe = torch.compile(build_pipe())


def make():
    torch.manual_seed(0)
    x = torch.randn(3, 8)
    return build_pipe(), [(x,), (x[:1],)]
