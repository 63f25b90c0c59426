"""diffusers First Block Cache: the head block hook decides per step whether to run the remaining blocks through a `@torch.compiler.disable` helper that calls `.item()`, and replays cached tail residuals when it says no.

Source: huggingface/diffusers@v0.42.1:src/diffusers/hooks/first_block_cache.py:33-258; src/diffusers/hooks/hooks.py:28-93; src/diffusers/hooks/_helpers.py:12-37; src/diffusers/models/cache_utils.py:182-196
Kept: FirstBlockCacheConfig, FBCSharedBlockState, FBCHeadBlockHook (residual of
the head block, `_should_compute_remaining_blocks` under @torch.compiler.disable
with `(absmean / prev_absmean).item()` against the threshold, the cached
path adding tail residuals, tuple/non-tuple outputs), FBCBlockHook (tail
residuals, pass-through of hidden states when skipped),
apply_first_block_cache (head/tail selection from transformer_blocks,
logger.debug per block), BaseState, the frozen CacheContext dataclass,
StateManager (per-context state cache) and TransformerBlockMetadata's
argument lookup through inspect.signature.
Simplified: HookRegistry.register_hook is reduced to binding
`fn_ref.original_forward` and replacing `module.forward` by a partial of
new_forward; the model is a toy of 3 residual MLP blocks. make() runs the
first denoising step eagerly under cache_context("cond"), which fills the
cache; the input sets are the next step with a small and a large change.
"""
import functools
import inspect
import logging
from dataclasses import dataclass
from typing import Any, Type

import torch
from torch import nn

logger = logging.getLogger(__name__)  # pylint: disable=invalid-name

_ALL_TRANSFORMER_BLOCK_IDENTIFIERS = ("blocks", "transformer_blocks", "single_transformer_blocks")


@dataclass
class TransformerBlockMetadata:
    return_hidden_states_index: int = None
    return_encoder_hidden_states_index: int = None
    hidden_states_argument_name: str = "hidden_states"
    encoder_hidden_states_argument_name: str = "encoder_hidden_states"

    _cls: Type = None
    _cached_parameter_indices: dict = None

    def _get_parameter_from_args_kwargs(self, identifier: str, args=(), kwargs=None):
        kwargs = kwargs or {}
        if identifier in kwargs:
            return kwargs[identifier]
        if self._cached_parameter_indices is not None:
            return args[self._cached_parameter_indices[identifier]]
        if self._cls is None:
            raise ValueError("Model class is not set for metadata.")
        parameters = list(inspect.signature(self._cls.forward).parameters.keys())
        parameters = parameters[1:]  # skip `self`
        self._cached_parameter_indices = {param: i for i, param in enumerate(parameters)}
        if identifier not in self._cached_parameter_indices:
            raise ValueError(f"Parameter '{identifier}' not found in function signature but was requested.")
        index = self._cached_parameter_indices[identifier]
        if index >= len(args):
            raise ValueError(f"Expected {index} arguments but got {len(args)}.")
        return args[index]


class BaseState:
    def reset(self, *args, **kwargs) -> None:
        raise NotImplementedError(
            "BaseState::reset is not implemented. Please implement this method in the derived class."
        )


@dataclass(frozen=True)
class CacheContext:
    name: str
    step_index: int = None
    num_inference_steps: int = None
    timestep: Any = None
    sigma: float = None


class StateManager:
    def __init__(self, state_cls, init_args=None, init_kwargs=None):
        self._state_cls = state_cls
        self._init_args = init_args if init_args is not None else ()
        self._init_kwargs = init_kwargs if init_kwargs is not None else {}
        self._state_cache = {}
        self._context = None

    @property
    def context(self) -> CacheContext:
        if self._context is None:
            raise ValueError(
                "No cache context is set. Wrap the denoiser call in `model.cache_context(name, ...)` before calling it."
            )
        return self._context

    def get_state(self):
        name = self.context.name
        if name not in self._state_cache.keys():
            self._state_cache[name] = self._state_cls(*self._init_args, **self._init_kwargs)
        return self._state_cache[name]

    def set_context(self, context) -> None:
        self._context = context

    def reset(self, *args, **kwargs) -> None:
        for name, state in list(self._state_cache.items()):
            state.reset(*args, **kwargs)
            self._state_cache.pop(name)
        self._context = None


class ModelHook:
    _is_stateful = False

    def __init__(self):
        self.fn_ref = None


class HookFunctionReference:
    def __init__(self) -> None:
        self.original_forward = None


def _register_hook(module: nn.Module, hook: ModelHook) -> None:
    module = hook.initialize_hook(module)
    fn_ref = HookFunctionReference()
    fn_ref.original_forward = module.forward
    hook.fn_ref = fn_ref
    module.forward = functools.partial(hook.new_forward, module)
    module._diffusers_hook = hook


@dataclass
class FirstBlockCacheConfig:
    threshold: float = 0.05


class FBCSharedBlockState(BaseState):
    def __init__(self) -> None:
        super().__init__()

        self.head_block_output = None
        self.head_block_residual: torch.Tensor = None
        self.tail_block_residuals = None
        self.should_compute: bool = True

    def reset(self):
        self.tail_block_residuals = None
        self.should_compute = True


class FBCHeadBlockHook(ModelHook):
    _is_stateful = True

    def __init__(self, state_manager: StateManager, threshold: float):
        self.state_manager = state_manager
        self.threshold = threshold
        self._metadata = None

    def initialize_hook(self, module):
        self._metadata = TransformerBlockMetadata(_cls=module.__class__)
        return module

    def new_forward(self, module: torch.nn.Module, *args, **kwargs):
        original_hidden_states = self._metadata._get_parameter_from_args_kwargs("hidden_states", args, kwargs)

        output = self.fn_ref.original_forward(*args, **kwargs)
        is_output_tuple = isinstance(output, tuple)

        if is_output_tuple:
            hidden_states_residual = output[self._metadata.return_hidden_states_index] - original_hidden_states
        else:
            hidden_states_residual = output - original_hidden_states

        shared_state: FBCSharedBlockState = self.state_manager.get_state()
        hidden_states = encoder_hidden_states = None
        should_compute = self._should_compute_remaining_blocks(hidden_states_residual)
        shared_state.should_compute = should_compute

        if not should_compute:
            # Apply caching
            if is_output_tuple:
                hidden_states = (
                    shared_state.tail_block_residuals[0] + output[self._metadata.return_hidden_states_index]
                )
            else:
                hidden_states = shared_state.tail_block_residuals[0] + output

            if self._metadata.return_encoder_hidden_states_index is not None:
                assert is_output_tuple
                encoder_hidden_states = (
                    shared_state.tail_block_residuals[1] + output[self._metadata.return_encoder_hidden_states_index]
                )

            if is_output_tuple:
                return_output = [None] * len(output)
                return_output[self._metadata.return_hidden_states_index] = hidden_states
                return_output[self._metadata.return_encoder_hidden_states_index] = encoder_hidden_states
                return_output = tuple(return_output)
            else:
                return_output = hidden_states
            output = return_output
        else:
            if is_output_tuple:
                head_block_output = [None] * len(output)
                head_block_output[0] = output[self._metadata.return_hidden_states_index]
                head_block_output[1] = output[self._metadata.return_encoder_hidden_states_index]
            else:
                head_block_output = output
            shared_state.head_block_output = head_block_output
            shared_state.head_block_residual = hidden_states_residual

        return output

    def reset_state(self, module):
        self.state_manager.reset()
        return module

    @torch.compiler.disable
    def _should_compute_remaining_blocks(self, hidden_states_residual: torch.Tensor) -> bool:
        shared_state = self.state_manager.get_state()
        if shared_state.head_block_residual is None:
            return True
        prev_hidden_states_residual = shared_state.head_block_residual
        absmean = (hidden_states_residual - prev_hidden_states_residual).abs().mean()
        prev_hidden_states_absmean = prev_hidden_states_residual.abs().mean()
        diff = (absmean / prev_hidden_states_absmean).item()
        return diff > self.threshold


class FBCBlockHook(ModelHook):
    def __init__(self, state_manager: StateManager, is_tail: bool = False):
        super().__init__()
        self.state_manager = state_manager
        self.is_tail = is_tail
        self._metadata = None

    def initialize_hook(self, module):
        self._metadata = TransformerBlockMetadata(_cls=module.__class__)
        return module

    def new_forward(self, module: torch.nn.Module, *args, **kwargs):
        original_hidden_states = self._metadata._get_parameter_from_args_kwargs("hidden_states", args, kwargs)
        original_encoder_hidden_states = None
        if self._metadata.return_encoder_hidden_states_index is not None:
            original_encoder_hidden_states = self._metadata._get_parameter_from_args_kwargs(
                "encoder_hidden_states", args, kwargs
            )

        shared_state = self.state_manager.get_state()

        if shared_state.should_compute:
            output = self.fn_ref.original_forward(*args, **kwargs)
            if self.is_tail:
                hidden_states_residual = encoder_hidden_states_residual = None
                if isinstance(output, tuple):
                    hidden_states_residual = (
                        output[self._metadata.return_hidden_states_index] - shared_state.head_block_output[0]
                    )
                    encoder_hidden_states_residual = (
                        output[self._metadata.return_encoder_hidden_states_index] - shared_state.head_block_output[1]
                    )
                else:
                    hidden_states_residual = output - shared_state.head_block_output
                shared_state.tail_block_residuals = (hidden_states_residual, encoder_hidden_states_residual)
            return output

        if original_encoder_hidden_states is None:
            return_output = original_hidden_states
        else:
            return_output = [None, None]
            return_output[self._metadata.return_hidden_states_index] = original_hidden_states
            return_output[self._metadata.return_encoder_hidden_states_index] = original_encoder_hidden_states
            return_output = tuple(return_output)
        return return_output


def apply_first_block_cache(module: torch.nn.Module, config: FirstBlockCacheConfig) -> None:
    state_manager = StateManager(FBCSharedBlockState, (), {})
    remaining_blocks = []

    for name, submodule in module.named_children():
        if name not in _ALL_TRANSFORMER_BLOCK_IDENTIFIERS or not isinstance(submodule, torch.nn.ModuleList):
            continue
        for index, block in enumerate(submodule):
            remaining_blocks.append((f"{name}.{index}", block))

    head_block_name, head_block = remaining_blocks.pop(0)
    tail_block_name, tail_block = remaining_blocks.pop(-1)

    logger.debug(f"Applying FBCHeadBlockHook to '{head_block_name}'")
    _register_hook(head_block, FBCHeadBlockHook(state_manager, config.threshold))

    for name, block in remaining_blocks:
        logger.debug(f"Applying FBCBlockHook to '{name}'")
        _register_hook(block, FBCBlockHook(state_manager))

    logger.debug(f"Applying FBCBlockHook to tail block '{tail_block_name}'")
    _register_hook(tail_block, FBCBlockHook(state_manager, is_tail=True))
    module._fbc_state_manager = state_manager


class ToyBlock(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.ff = nn.Sequential(nn.Linear(dim, 2 * dim), nn.GELU(), nn.Linear(2 * dim, dim))

    def forward(self, hidden_states, temb):
        return hidden_states + self.ff(self.norm(hidden_states) + temb)


class ToyTransformer(nn.Module):
    def __init__(self, dim=8, num_layers=3):
        super().__init__()
        self.transformer_blocks = nn.ModuleList([ToyBlock(dim) for _ in range(num_layers)])
        self.proj_out = nn.Linear(dim, dim)

    def forward(self, hidden_states, temb):
        for block in self.transformer_blocks:
            hidden_states = block(hidden_states, temb)
        return self.proj_out(hidden_states)


def build_cached_transformer():
    transformer = ToyTransformer()
    apply_first_block_cache(transformer, FirstBlockCacheConfig(threshold=0.2))
    # what `with transformer.cache_context("cond"):` sets around each denoiser call
    transformer._fbc_state_manager.set_context(CacheContext("cond"))
    return transformer


transformer = torch.compile(build_cached_transformer(), fullgraph=False)


def make():
    torch.manual_seed(0)
    model = build_cached_transformer()
    latents, temb = torch.randn(2, 4, 8), torch.randn(2, 1, 8)
    with torch.no_grad():
        model(latents, temb)  # first denoising step: fills the head residual and the tail residuals
    return model, [(latents + 0.01 * torch.randn(2, 4, 8), temb), (torch.randn(2, 4, 8) * 3, -temb)]
