"""diffusers FasterCacheBlockHook.new_forward: logger.debug on both the skip and the compute path of a hooked attention block.

Source: huggingface/diffusers@58eb52c080:src/diffusers/hooks/faster_cache.py:203-218,368-470; src/diffusers/hooks/hooks.py:144-215
Kept: FasterCacheBlockState, the hook's batch-size list unpacking, the
timestep-range check through current_timestep_callback, the block_skip_range
modulo, `logger.debug("FasterCache - Skipping attention and using approximation")`
/ `logger.debug("FasterCache - Computing attention")`, the approximation from
the two cached outputs (tensor and tuple caches), caching only the
conditional half, the iteration counter; HookRegistry.register_hook's
HookFunctionReference with functools.partial/update_wrapper rewriting
module.forward. The logger is at its default level, so debug prints nothing.
Simplified: ModelHook has identity pre/post_forward; one attention block in
a two-block toy transformer; the denoiser-level hook is not applied; weights
from a constant weight_callback.
"""
import functools
import logging

import torch
from torch import nn

logger = logging.getLogger(__name__)


class ModelHook:
    _is_stateful = False

    def __init__(self):
        self.fn_ref = None

    def initialize_hook(self, module):
        return module

    def pre_forward(self, module, *args, **kwargs):
        return args, kwargs

    def post_forward(self, module, output):
        return output


class HookFunctionReference:
    def __init__(self) -> None:
        self.pre_forward = None
        self.post_forward = None
        self.forward = None
        self.original_forward = None


class HookRegistry:
    def __init__(self, module_ref):
        super().__init__()
        self.hooks = {}
        self._module_ref = module_ref
        self._hook_order = []
        self._fn_refs = []

    def register_hook(self, hook, name):
        if name in self.hooks.keys():
            raise ValueError(
                f"Hook with name {name} already exists in the registry. Please use a different name or "
                f"first remove the existing hook and then add a new one."
            )

        self._module_ref = hook.initialize_hook(self._module_ref)

        def create_new_forward(function_reference):
            def new_forward(module, *args, **kwargs):
                args, kwargs = function_reference.pre_forward(module, *args, **kwargs)
                output = function_reference.forward(*args, **kwargs)
                return function_reference.post_forward(module, output)

            return new_forward

        forward = self._module_ref.forward

        fn_ref = HookFunctionReference()
        fn_ref.pre_forward = hook.pre_forward
        fn_ref.post_forward = hook.post_forward
        fn_ref.forward = forward

        if hasattr(hook, "new_forward"):
            fn_ref.original_forward = forward
            fn_ref.forward = functools.update_wrapper(
                functools.partial(hook.new_forward, self._module_ref), hook.new_forward
            )

        rewritten_forward = create_new_forward(fn_ref)
        self._module_ref.forward = functools.update_wrapper(
            functools.partial(rewritten_forward, self._module_ref), forward
        )

        hook.fn_ref = fn_ref
        self.hooks[name] = hook
        self._hook_order.append(name)
        self._fn_refs.append(fn_ref)


class FasterCacheBlockState:
    def __init__(self) -> None:
        self.iteration: int = 0
        self.batch_size: int = None
        self.cache = None

    def reset(self):
        self.iteration = 0
        self.batch_size = None
        self.cache = None


class FasterCacheBlockHook(ModelHook):
    _is_stateful = True

    def __init__(self, block_skip_range, timestep_skip_range, is_guidance_distilled, weight_callback,
                 current_timestep_callback):
        super().__init__()
        self.block_skip_range = block_skip_range
        self.timestep_skip_range = timestep_skip_range
        self.is_guidance_distilled = is_guidance_distilled
        self.weight_callback = weight_callback
        self.current_timestep_callback = current_timestep_callback

    def initialize_hook(self, module):
        self.state = FasterCacheBlockState()
        return module

    def _compute_approximated_attention_output(self, t_2_output, t_output, weight, batch_size):
        if t_2_output.size(0) != batch_size:
            assert t_2_output.size(0) == 2 * batch_size
            t_2_output = t_2_output[batch_size:]
        if t_output.size(0) != batch_size:
            assert t_output.size(0) == 2 * batch_size
            t_output = t_output[batch_size:]
        return t_output + (t_output - t_2_output) * weight

    def new_forward(self, module, *args, **kwargs):
        batch_size = [
            *[arg.size(0) for arg in args if torch.is_tensor(arg)],
            *[v.size(0) for v in kwargs.values() if torch.is_tensor(v)],
        ][0]
        if self.state.batch_size is None:
            self.state.batch_size = batch_size

        is_within_timestep_range = (
            self.timestep_skip_range[0] < self.current_timestep_callback() < self.timestep_skip_range[1]
        )
        if not is_within_timestep_range:
            should_skip_attention = False
        else:
            should_compute_attention = self.state.iteration > 0 and self.state.iteration % self.block_skip_range == 0
            should_skip_attention = not should_compute_attention
        if should_skip_attention:
            should_skip_attention = self.is_guidance_distilled or self.state.batch_size != batch_size

        if should_skip_attention:
            logger.debug("FasterCache - Skipping attention and using approximation")
            if torch.is_tensor(self.state.cache[-1]):
                t_2_output, t_output = self.state.cache
                weight = self.weight_callback(module)
                output = self._compute_approximated_attention_output(t_2_output, t_output, weight, batch_size)
            else:
                output = ()
                for t_2_output, t_output in zip(*self.state.cache):
                    result = self._compute_approximated_attention_output(
                        t_2_output, t_output, self.weight_callback(module), batch_size
                    )
                    output += (result,)
        else:
            logger.debug("FasterCache - Computing attention")
            output = self.fn_ref.original_forward(*args, **kwargs)

        if torch.is_tensor(output):
            cache_output = output
            if not self.is_guidance_distilled and cache_output.size(0) == self.state.batch_size:
                cache_output = cache_output.chunk(2, dim=0)[1]
        else:
            cache_output = ()
            for out in output:
                if not self.is_guidance_distilled and out.size(0) == self.state.batch_size:
                    out = out.chunk(2, dim=0)[1]
                cache_output += (out,)

        if self.state.cache is None:
            self.state.cache = [cache_output, cache_output]
        else:
            self.state.cache = [self.state.cache[-1], cache_output]

        self.state.iteration += 1
        return output


class SelfAttention(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.qkv = nn.Linear(dim, 3 * dim)
        self.out = nn.Linear(dim, dim)

    def forward(self, hidden_states):
        q, k, v = self.qkv(hidden_states).chunk(3, dim=-1)
        return self.out(torch.nn.functional.scaled_dot_product_attention(q, k, v))


class Block(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.attn1 = SelfAttention(dim)

    def forward(self, hidden_states):
        return hidden_states + self.attn1(self.norm(hidden_states))


class TinyTransformer(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.blocks = nn.ModuleList([Block(dim), Block(dim)])
        self.proj_out = nn.Linear(dim, dim)

    def forward(self, hidden_states):
        for block in self.blocks:
            hidden_states = block(hidden_states)
        return self.proj_out(hidden_states)


class PipelineState:
    current_timestep = 500


def apply_faster_cache(model, pipe_state):
    for name, module in model.named_modules():
        if name.endswith("attn1"):
            hook = FasterCacheBlockHook(
                block_skip_range=2,
                timestep_skip_range=(-1, 681),
                is_guidance_distilled=False,
                weight_callback=lambda _: 0.5,
                current_timestep_callback=lambda: pipe_state.current_timestep,
            )
            HookRegistry(module).register_hook(hook, "faster_cache_block")
    return model


def build():
    torch.manual_seed(0)
    model = apply_faster_cache(TinyTransformer(), PipelineState())
    with torch.no_grad():
        model(torch.randn(2, 3, 8))
    return model


transformer = torch.compile(build())


def make():
    model = build()
    x = torch.randn(2, 3, 8)
    return model, [(x[1:],), (x,), (x[1:],), (x,)]
