"""PI0 flow-matching sampler: `while time >= -dt / 2` on 0-d tensors, Euler steps through a KV-cached expert.

Source: https://github.com/huggingface/lerobot/pull/2600 (huggingface/lerobot@f9cb5e659:src/lerobot/policies/pi0/modeling_pi0.py:
get_safe_dtype, create_sinusoidal_pos_embedding, make_att_2d_masks, PI0Pytorch.__init__ compile hook,
_rtc_enabled, _apply_checkpoint, _prepare_attention_masks_4d, sample_noise, embed_prefix, embed_suffix,
sample_actions, denoise_step)
Kept: sample_actions as it was before the PR (tensor `time` / `dt`, the while loop on their comparison, the
closure with a default-bound timestep, the RTC branch, in-place Euler update), the prefix/suffix embedding
helpers with their Python attention-mask lists, the `config._attn_implementation = "eager"` writes, and the
`self.sample_actions = torch.compile(self.sample_actions, ...)` hook from __init__.
Simplified: PaliGemmaWithExpertModel is a one-layer joint-attention stand-in with a (k, v) prefix cache and
nested `paligemma.language_model.config` / `gemma_expert.model.config` objects; SigLIP is a patch linear;
no RTC processor (rtc_config None), no gradient checkpointing; tiny sizes.
"""
import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

OPENPI_ATTENTION_MASK_VALUE = -2.3819763e38


class PI0Config:
    max_action_dim = 4
    max_state_dim = 4
    chunk_size = 3
    num_inference_steps = 4
    min_period = 4e-3
    max_period = 4.0
    compile_model = False
    compile_mode = "max-autotune"
    rtc_config = None
    width = 8
    vocab_size = 16
    patch_dim = 12


def get_safe_dtype(target_dtype, device_type):
    """Get a safe dtype for the given device type."""
    if device_type == "mps" and target_dtype == torch.float64:
        return torch.float32
    if device_type == "cpu":
        # CPU doesn't support bfloat16, use float32 instead
        if target_dtype == torch.bfloat16:
            return torch.float32
        if target_dtype == torch.float64:
            return torch.float64
    return target_dtype


def create_sinusoidal_pos_embedding(time: torch.Tensor, dimension: int, min_period: float, max_period: float, device="cpu") -> Tensor:
    """Computes sine-cosine positional embedding vectors for scalar positions."""
    if dimension % 2 != 0:
        raise ValueError(f"dimension ({dimension}) must be divisible by 2")

    if time.ndim != 1:
        raise ValueError("The time tensor is expected to be of shape `(batch_size, )`.")

    dtype = get_safe_dtype(torch.float64, device.type)
    fraction = torch.linspace(0.0, 1.0, dimension // 2, dtype=dtype, device=device)
    period = min_period * (max_period / min_period) ** fraction

    # Compute the outer product
    scaling_factor = 1.0 / period * 2 * math.pi
    sin_input = scaling_factor[None, :] * time[:, None]
    return torch.cat([torch.sin(sin_input), torch.cos(sin_input)], dim=1)


def make_att_2d_masks(pad_masks, att_masks):
    if att_masks.ndim != 2:
        raise ValueError(att_masks.ndim)
    if pad_masks.ndim != 2:
        raise ValueError(pad_masks.ndim)

    cumsum = torch.cumsum(att_masks, dim=1)
    att_2d_masks = cumsum[:, None, :] <= cumsum[:, :, None]
    pad_2d_masks = pad_masks[:, None, :] * pad_masks[:, :, None]
    return att_2d_masks & pad_2d_masks


class _Cfg:
    def __init__(self):
        self._attn_implementation = "sdpa"


class _LM(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.config = _Cfg()
        self.qkv = nn.Linear(width, 3 * width)
        self.out = nn.Linear(width, width)


class _Paligemma(nn.Module):
    def __init__(self, width, vocab, patch_dim):
        super().__init__()
        self.language_model = _LM(width)
        self.vision_tower = nn.Linear(patch_dim, width)
        self.embed_tokens = nn.Embedding(vocab, width)


class _Expert(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.model = _LM(width)


class PaliGemmaWithExpertModel(nn.Module):
    """One joint-attention layer: prefix tokens through the VLM weights, suffix tokens through the expert."""

    def __init__(self, width, vocab, patch_dim):
        super().__init__()
        self.paligemma = _Paligemma(width, vocab, patch_dim)
        self.gemma_expert = _Expert(width)

    def embed_image(self, image: torch.Tensor):
        return self.paligemma.vision_tower(image)

    def embed_language_tokens(self, tokens: torch.Tensor):
        return self.paligemma.embed_tokens(tokens)

    def forward(self, attention_mask=None, position_ids=None, past_key_values=None, inputs_embeds=None,
                use_cache=None, adarms_cond=None):
        prefix, suffix = inputs_embeds
        outputs, keys, values, queries = [None, None], [], [], []
        for i, (h, lm) in enumerate(((prefix, self.paligemma.language_model), (suffix, self.gemma_expert.model))):
            if h is None:
                continue
            q, k, v = lm.qkv(h).chunk(3, dim=-1)
            queries.append((i, q))
            keys.append(k)
            values.append(v)
        if past_key_values is not None:
            keys.insert(0, past_key_values[0])
            values.insert(0, past_key_values[1])
        k = torch.cat(keys, dim=1)
        v = torch.cat(values, dim=1)
        q = torch.cat([q for _, q in queries], dim=1)
        attn = F.scaled_dot_product_attention(q[:, None], k[:, None], v[:, None], attn_mask=attention_mask)[:, 0]
        start = 0
        for i, q_i in queries:
            n = q_i.shape[1]
            lm = self.paligemma.language_model if i == 0 else self.gemma_expert.model
            outputs[i] = lm.out(attn[:, start : start + n])
            start += n
        new_cache = (k, v) if use_cache else None
        return outputs, new_cache


class PI0Pytorch(nn.Module):  # see openpi `PI0Pytorch`
    """Core PI0 PyTorch model."""

    def __init__(self, config: PI0Config, rtc_processor=None):
        super().__init__()
        self.config = config
        self.rtc_processor = rtc_processor

        self.paligemma_with_expert = PaliGemmaWithExpertModel(config.width, config.vocab_size, config.patch_dim)

        self.action_in_proj = nn.Linear(config.max_action_dim, config.width)
        self.action_out_proj = nn.Linear(config.width, config.max_action_dim)

        self.state_proj = nn.Linear(config.max_state_dim, config.width)
        self.action_time_mlp_in = nn.Linear(2 * config.width, config.width)
        self.action_time_mlp_out = nn.Linear(config.width, config.width)

        # Initialize gradient checkpointing flag
        self.gradient_checkpointing_enabled = False

        # Compile model if requested
        if config.compile_model:
            torch.set_float32_matmul_precision("high")
            self.sample_actions = torch.compile(self.sample_actions, mode=config.compile_mode)
            # Also compile the main forward pass used during training
            self.forward = torch.compile(self.forward, mode=config.compile_mode)

    def _rtc_enabled(self):
        return self.config.rtc_config is not None and self.config.rtc_config.enabled

    def _apply_checkpoint(self, func, *args, **kwargs):
        """Helper method to apply gradient checkpointing if enabled."""
        if self.gradient_checkpointing_enabled and self.training:
            return torch.utils.checkpoint.checkpoint(func, *args, use_reentrant=False, preserve_rng_state=False, **kwargs)
        return func(*args, **kwargs)

    def _prepare_attention_masks_4d(self, att_2d_masks):
        """Helper method to prepare 4D attention masks for transformer."""
        att_2d_masks_4d = att_2d_masks[:, None, :, :]
        return torch.where(att_2d_masks_4d, 0.0, OPENPI_ATTENTION_MASK_VALUE)

    def sample_noise(self, shape, device):
        return torch.normal(mean=0.0, std=1.0, size=shape, dtype=torch.float32, device=device)

    def embed_prefix(self, images, img_masks, lang_tokens, lang_masks):
        """Embed images with SigLIP and language tokens with embedding layer."""
        embs = []
        pad_masks = []
        att_masks = []

        # Process images
        for img, img_mask in zip(images, img_masks, strict=True):

            def image_embed_func(img):
                return self.paligemma_with_expert.embed_image(img)

            img_emb = self._apply_checkpoint(image_embed_func, img)
            bsize, num_img_embs = img_emb.shape[:2]

            embs.append(img_emb)
            pad_masks.append(img_mask[:, None].expand(bsize, num_img_embs))
            att_masks += [0] * num_img_embs

        # Process language tokens
        def lang_embed_func(lang_tokens):
            lang_emb = self.paligemma_with_expert.embed_language_tokens(lang_tokens)
            lang_emb_dim = lang_emb.shape[-1]
            return lang_emb * math.sqrt(lang_emb_dim)

        lang_emb = self._apply_checkpoint(lang_embed_func, lang_tokens)
        embs.append(lang_emb)
        pad_masks.append(lang_masks)

        num_lang_embs = lang_emb.shape[1]
        att_masks += [0] * num_lang_embs

        embs = torch.cat(embs, dim=1)
        pad_masks = torch.cat(pad_masks, dim=1)
        att_masks = torch.tensor(att_masks, dtype=torch.bool, device=pad_masks.device)

        bsize = pad_masks.shape[0]
        att_masks = att_masks[None, :].expand(bsize, len(att_masks))

        return embs, pad_masks, att_masks

    def embed_suffix(self, state, noisy_actions, timestep):
        """Embed state, noisy_actions, timestep to prepare for Expert Gemma processing."""
        embs = []
        pad_masks = []
        att_masks = []

        if self.state_proj.weight.dtype == torch.float32:
            state = state.to(torch.float32)

        def state_proj_func(state):
            return self.state_proj(state)

        state_emb = self._apply_checkpoint(state_proj_func, state)
        embs.append(state_emb[:, None, :])
        bsize = state_emb.shape[0]
        device = state_emb.device

        state_mask = torch.ones(bsize, 1, dtype=torch.bool, device=device)
        pad_masks.append(state_mask)
        att_masks += [1]

        # Embed timestep using sine-cosine positional encoding
        time_emb = create_sinusoidal_pos_embedding(
            timestep,
            self.action_in_proj.out_features,
            min_period=self.config.min_period,
            max_period=self.config.max_period,
            device=timestep.device,
        )
        time_emb = time_emb.type(dtype=timestep.dtype)

        # Fuse timestep + action information using an MLP
        def action_proj_func(noisy_actions):
            return self.action_in_proj(noisy_actions)

        action_emb = self._apply_checkpoint(action_proj_func, noisy_actions)

        time_emb = time_emb[:, None, :].expand_as(action_emb)
        action_time_emb = torch.cat([action_emb, time_emb], dim=2)

        def mlp_func(action_time_emb):
            x = self.action_time_mlp_in(action_time_emb)
            x = F.silu(x)
            return self.action_time_mlp_out(x)

        action_time_emb = self._apply_checkpoint(mlp_func, action_time_emb)
        adarms_cond = None

        embs.append(action_time_emb)
        bsize, action_time_dim = action_time_emb.shape[:2]
        action_time_mask = torch.ones(bsize, action_time_dim, dtype=torch.bool, device=timestep.device)
        pad_masks.append(action_time_mask)

        # Set attention masks so that image, language and state inputs do not attend to action tokens
        att_masks += [1] + ([0] * (self.config.chunk_size - 1))

        embs = torch.cat(embs, dim=1)
        pad_masks = torch.cat(pad_masks, dim=1)
        att_masks = torch.tensor(att_masks, dtype=embs.dtype, device=embs.device)
        att_masks = att_masks[None, :].expand(bsize, len(att_masks))

        return embs, pad_masks, att_masks, adarms_cond

    @torch.no_grad()  # see openpi `sample_actions` (slightly adapted)
    def sample_actions(self, images, img_masks, lang_tokens, lang_masks, state, noise=None, num_steps=None, **kwargs) -> Tensor:
        """Do a full inference forward and compute the action."""
        if num_steps is None:
            num_steps = self.config.num_inference_steps

        bsize = state.shape[0]
        device = state.device

        if noise is None:
            # Sample noise with padded dimension as expected by action_in_proj
            actions_shape = (
                bsize,
                self.config.chunk_size,
                self.config.max_action_dim,
            )  # Use config max_action_dim for internal processing
            noise = self.sample_noise(actions_shape, device)

        prefix_embs, prefix_pad_masks, prefix_att_masks = self.embed_prefix(images, img_masks, lang_tokens, lang_masks)
        prefix_att_2d_masks = make_att_2d_masks(prefix_pad_masks, prefix_att_masks)
        prefix_position_ids = torch.cumsum(prefix_pad_masks, dim=1) - 1

        prefix_att_2d_masks_4d = self._prepare_attention_masks_4d(prefix_att_2d_masks)
        self.paligemma_with_expert.paligemma.language_model.config._attn_implementation = "eager"  # noqa: SLF001

        _, past_key_values = self.paligemma_with_expert.forward(
            attention_mask=prefix_att_2d_masks_4d,
            position_ids=prefix_position_ids,
            past_key_values=None,
            inputs_embeds=[prefix_embs, None],
            use_cache=True,
        )

        dt = -1.0 / num_steps
        dt = torch.tensor(dt, dtype=torch.float32, device=device)

        x_t = noise
        time = torch.tensor(1.0, dtype=torch.float32, device=device)
        while time >= -dt / 2:
            expanded_time = time.expand(bsize)

            # Define a closure function to properly capture expanded_time
            # This avoids the lambda expression (E731) and loop variable binding (B023) issues
            def denoise_step_partial_call(input_x_t, current_timestep=expanded_time):
                return self.denoise_step(
                    state=state,
                    prefix_pad_masks=prefix_pad_masks,
                    past_key_values=past_key_values,
                    x_t=input_x_t,
                    timestep=current_timestep,
                )

            if self._rtc_enabled():
                inference_delay = kwargs.get("inference_delay")
                prev_chunk_left_over = kwargs.get("prev_chunk_left_over")
                execution_horizon = kwargs.get("execution_horizon")

                v_t = self.rtc_processor.denoise_step(
                    x_t=x_t,
                    prev_chunk_left_over=prev_chunk_left_over,
                    inference_delay=inference_delay,
                    time=time,
                    original_denoise_step_partial=denoise_step_partial_call,
                    execution_horizon=execution_horizon,
                )
            else:
                v_t = denoise_step_partial_call(x_t)

            # Euler step
            x_t += dt * v_t

            # Record x_t and v_t after Euler step
            if self.rtc_processor is not None and self.rtc_processor.is_debug_enabled():
                self.rtc_processor.track(time=time, x_t=x_t, v_t=v_t)

            time += dt

        return x_t

    def denoise_step(self, state, prefix_pad_masks, past_key_values, x_t, timestep):
        """Apply one denoising step of the noise `x_t` at a given timestep."""
        suffix_embs, suffix_pad_masks, suffix_att_masks, adarms_cond = self.embed_suffix(state, x_t, timestep)

        suffix_len = suffix_pad_masks.shape[1]
        batch_size = prefix_pad_masks.shape[0]
        prefix_len = prefix_pad_masks.shape[1]

        prefix_pad_2d_masks = prefix_pad_masks[:, None, :].expand(batch_size, suffix_len, prefix_len)
        suffix_att_2d_masks = make_att_2d_masks(suffix_pad_masks, suffix_att_masks)
        full_att_2d_masks = torch.cat([prefix_pad_2d_masks, suffix_att_2d_masks], dim=2)

        prefix_offsets = torch.sum(prefix_pad_masks, dim=-1)[:, None]
        position_ids = prefix_offsets + torch.cumsum(suffix_pad_masks, dim=1) - 1

        full_att_2d_masks_4d = self._prepare_attention_masks_4d(full_att_2d_masks)
        self.paligemma_with_expert.gemma_expert.model.config._attn_implementation = "eager"  # noqa: SLF001

        outputs_embeds, _ = self.paligemma_with_expert.forward(
            attention_mask=full_att_2d_masks_4d,
            position_ids=position_ids,
            past_key_values=past_key_values,
            inputs_embeds=[None, suffix_embs],
            use_cache=False,
            adarms_cond=[None, adarms_cond],
        )

        suffix_out = outputs_embeds[1]
        suffix_out = suffix_out[:, -self.config.chunk_size :]
        suffix_out = suffix_out.to(dtype=torch.float32)
        return self.action_out_proj(suffix_out)


class CompiledPI0Config(PI0Config):
    compile_model = True


def build_policy_model(compile_model=True):
    config = CompiledPI0Config() if compile_model else PI0Config()
    return PI0Pytorch(config)


def _batch(bsize=1):
    images = [torch.randn(bsize, 4, PI0Config.patch_dim)]
    img_masks = [torch.ones(bsize, dtype=torch.bool)]
    lang_tokens = torch.randint(0, PI0Config.vocab_size, (bsize, 3))
    lang_masks = torch.ones(bsize, 3, dtype=torch.bool)
    state = torch.randn(bsize, PI0Config.max_state_dim)
    return images, img_masks, lang_tokens, lang_masks, state


def make():
    torch.manual_seed(0)
    model = build_policy_model(compile_model=False).eval()
    images, img_masks, lang_tokens, lang_masks, state = _batch()
    noise = torch.randn(1, PI0Config.chunk_size, PI0Config.max_action_dim)
    return model.sample_actions, [
        (images, img_masks, lang_tokens, lang_masks, state, noise),
        (images, img_masks, lang_tokens, lang_masks, state, None, 2),
    ]
