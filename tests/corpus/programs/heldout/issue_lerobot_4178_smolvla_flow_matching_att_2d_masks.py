"""SmolVLA flow-matching training forward: prefix/suffix masks concatenated and turned into a
prefix-LM 2D attention mask by make_att_2d_masks (cumsum + comparisons), compiled as the policy.

Source: huggingface/lerobot#4178 (https://github.com/huggingface/lerobot/issues/4178)
The issue reports `--policy.compile_model=true` miscompiling the cumsum/comparison ops of
`make_att_2d_masks` inside the compiled SmolVLA/PI0 forward (NaN loss); the linked fix puts
`@torch.compiler.disable` on the helper. This program is the code before that fix.
Kept: make_att_2d_masks with its two ndim ValueError guards; sample_beta / sample_noise /
sample_time; VLAFlowMatching.forward's `noise is None` / `time is None` branches, x_t / u_t,
embed_prefix / embed_suffix returning (embs, pad_masks, att_masks), the mask concatenation,
`position_ids = torch.cumsum(pad_masks, dim=1) - 1`, the `suffix_out[:, -chunk_size:]` slice,
float32 cast, action_out_proj and `F.mse_loss(..., reduction="none")`.
Simplified: no images (prefix = language tokens + one state token); the VLM+expert stack is one
masked attention layer with RoPE-free position embedding; tiny sizes.
"""
import math

import torch
import torch.nn.functional as F  # noqa: N812
from torch import Tensor, nn


def create_sinusoidal_pos_embedding(
    time: torch.tensor, dimension: int, min_period: float, max_period: float, device="cpu"
) -> Tensor:
    """Computes sine-cosine positional embedding vectors for scalar positions."""
    if dimension % 2 != 0:
        raise ValueError(f"dimension ({dimension}) must be divisible by 2")

    if time.ndim != 1:
        raise ValueError("The time tensor is expected to be of shape `(batch_size, )`.")

    fraction = torch.linspace(0.0, 1.0, dimension // 2, dtype=torch.float32, device=device)
    period = min_period * (max_period / min_period) ** fraction

    # Compute the outer product
    scaling_factor = 1.0 / period * 2 * math.pi
    sin_input = scaling_factor[None, :] * time[:, None]
    pos_emb = torch.cat([torch.sin(sin_input), torch.cos(sin_input)], dim=1)
    return pos_emb


def sample_beta(alpha, beta, bsize, device):
    gamma1 = torch.empty((bsize,), device=device).uniform_(0, 1).pow(1 / alpha)
    gamma2 = torch.empty((bsize,), device=device).uniform_(0, 1).pow(1 / beta)
    return gamma1 / (gamma1 + gamma2)


def make_att_2d_masks(pad_masks, att_masks):
    """Copied from big_vision.

    Tokens can attend to valid inputs tokens which have a cumulative mask_ar
    smaller or equal to theirs. This way `mask_ar` int[B, N] can be used to
    setup several types of attention, for example:

      [[1 1 1 1 1 1]]: pure causal attention.

      [[0 0 0 1 1 1]]: prefix-lm attention. The first 3 tokens can attend between
          themselves and the last 3 tokens have a causal attention. The first
          entry could also be a 1 without changing behaviour.
    """
    if att_masks.ndim != 2:
        raise ValueError(att_masks.ndim)
    if pad_masks.ndim != 2:
        raise ValueError(pad_masks.ndim)

    cumsum = torch.cumsum(att_masks, dim=1)
    att_2d_masks = cumsum[:, None, :] <= cumsum[:, :, None]
    pad_2d_masks = pad_masks[:, None, :] * pad_masks[:, :, None]
    att_2d_masks = att_2d_masks & pad_2d_masks
    return att_2d_masks


class SmolVLAConfig:
    chunk_size = 4
    max_state_dim = 6
    max_action_dim = 6
    hidden_size = 16
    expert_hidden_size = 16
    vocab_size = 32
    min_period = 4e-3
    max_period = 4.0


class VLMWithExpert(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.q = nn.Linear(config.hidden_size, config.hidden_size)
        self.k = nn.Linear(config.hidden_size, config.hidden_size)
        self.v = nn.Linear(config.hidden_size, config.hidden_size)
        self.pos = nn.Embedding(64, config.hidden_size)

    def forward(self, attention_mask, position_ids, inputs_embeds):
        h = inputs_embeds + self.pos(position_ids)
        scores = self.q(h) @ self.k(h).transpose(1, 2) / math.sqrt(h.shape[-1])
        big_neg = -2.3819763e38
        scores = torch.where(attention_mask, scores, big_neg)
        out = torch.softmax(scores, dim=-1) @ self.v(h)
        return out


class VLAFlowMatching(nn.Module):
    def __init__(self, config: SmolVLAConfig):
        super().__init__()
        self.config = config
        self.vlm_with_expert = VLMWithExpert(config)
        self.embed_tokens = nn.Embedding(config.vocab_size, config.hidden_size)
        self.state_proj = nn.Linear(config.max_state_dim, config.hidden_size)
        self.action_in_proj = nn.Linear(config.max_action_dim, config.expert_hidden_size)
        self.action_out_proj = nn.Linear(config.expert_hidden_size, config.max_action_dim)
        self.action_time_mlp_in = nn.Linear(config.expert_hidden_size * 2, config.expert_hidden_size)
        self.action_time_mlp_out = nn.Linear(config.expert_hidden_size, config.expert_hidden_size)

    def sample_noise(self, shape, device):
        noise = torch.normal(
            mean=0.0,
            std=1.0,
            size=shape,
            dtype=torch.float32,
            device=device,
        )
        return noise

    def sample_time(self, bsize, device):
        time_beta = sample_beta(1.5, 1.0, bsize, device)
        time = time_beta * 0.999 + 0.001
        return time.to(dtype=torch.float32, device=device)

    def embed_prefix(self, lang_tokens, lang_masks, state=None):
        embs = []
        pad_masks = []
        att_masks = []

        lang_emb = self.embed_tokens(lang_tokens)
        lang_emb_dim = lang_emb.shape[-1]
        lang_emb = lang_emb * math.sqrt(lang_emb_dim)
        embs.append(lang_emb)
        pad_masks.append(lang_masks)
        num_lang_embs = lang_emb.shape[1]
        att_masks += [0] * num_lang_embs

        state_emb = self.state_proj(state)
        state_emb = state_emb[:, None, :] if state_emb.ndim == 2 else state_emb
        embs.append(state_emb)
        bsize = state_emb.shape[0]
        device = state_emb.device
        states_seq_len = state_emb.shape[1]
        state_mask = torch.ones(bsize, states_seq_len, dtype=torch.bool, device=device)
        pad_masks.append(state_mask)
        # Set attention masks so that image and language inputs do not attend to state or actions
        att_masks += [1] * (states_seq_len)

        embs = torch.cat(embs, dim=1)
        pad_masks = torch.cat(pad_masks, dim=1)
        att_masks = torch.tensor(att_masks, dtype=torch.bool, device=pad_masks.device)
        att_masks = att_masks[None, :].expand(bsize, len(att_masks))
        return embs, pad_masks, att_masks

    def embed_suffix(self, noisy_actions, timestep):
        embs = []
        pad_masks = []
        att_masks = []

        action_emb = self.action_in_proj(noisy_actions)
        device = action_emb.device
        bsize = action_emb.shape[0]
        dtype = action_emb.dtype
        time_emb = create_sinusoidal_pos_embedding(
            timestep,
            self.config.expert_hidden_size,
            self.config.min_period,
            self.config.max_period,
            device=device,
        )
        time_emb = time_emb.type(dtype=dtype)

        time_emb = time_emb[:, None, :].expand_as(action_emb)
        action_time_emb = torch.cat([action_emb, time_emb], dim=2)

        action_time_emb = self.action_time_mlp_in(action_time_emb)
        action_time_emb = F.silu(action_time_emb)  # swish == silu
        action_time_emb = self.action_time_mlp_out(action_time_emb)

        embs.append(action_time_emb)
        bsize, action_time_dim = action_time_emb.shape[:2]
        action_time_mask = torch.ones(bsize, action_time_dim, dtype=torch.bool, device=device)
        pad_masks.append(action_time_mask)

        # Set attention masks so that image, language and state inputs do not attend to action tokens
        att_masks += [1] * self.config.chunk_size
        embs = torch.cat(embs, dim=1)
        pad_masks = torch.cat(pad_masks, dim=1)
        att_masks = torch.tensor(att_masks, dtype=embs.dtype, device=embs.device)
        att_masks = att_masks[None, :].expand(bsize, len(att_masks))
        return embs, pad_masks, att_masks

    def forward(self, lang_tokens, lang_masks, state, actions, noise=None, time=None) -> Tensor:
        """Do a full training forward pass and compute the loss (batch_size x num_steps x num_motors)"""
        if noise is None:
            noise = self.sample_noise(actions.shape, actions.device)

        if time is None:
            time = self.sample_time(actions.shape[0], actions.device)

        time_expanded = time[:, None, None]
        x_t = time_expanded * noise + (1 - time_expanded) * actions
        u_t = noise - actions
        prefix_embs, prefix_pad_masks, prefix_att_masks = self.embed_prefix(
            lang_tokens, lang_masks, state=state
        )
        suffix_embs, suffix_pad_masks, suffix_att_masks = self.embed_suffix(x_t, time)

        pad_masks = torch.cat([prefix_pad_masks, suffix_pad_masks], dim=1)
        att_masks = torch.cat([prefix_att_masks, suffix_att_masks], dim=1)

        att_2d_masks = make_att_2d_masks(pad_masks, att_masks)
        position_ids = torch.cumsum(pad_masks, dim=1) - 1
        suffix_out = self.vlm_with_expert.forward(
            attention_mask=att_2d_masks,
            position_ids=position_ids,
            inputs_embeds=torch.cat([prefix_embs, suffix_embs], dim=1),
        )
        suffix_out = suffix_out[:, -self.config.chunk_size :]
        # Original openpi code, upcast attention output
        suffix_out = suffix_out.to(dtype=torch.float32)
        v_t = self.action_out_proj(suffix_out)
        losses = F.mse_loss(u_t, v_t, reduction="none")
        return losses


def make_policy_model(config, compile_model=True, compile_mode="default"):
    model = VLAFlowMatching(config)
    if compile_model:
        model = torch.compile(model, mode=compile_mode)
    return model


def make():
    torch.manual_seed(0)
    cfg = SmolVLAConfig()
    model = VLAFlowMatching(cfg)
    b = 2
    lang_tokens = torch.randint(0, cfg.vocab_size, (b, 5))
    lang_masks = torch.tensor([[True] * 5, [True] * 3 + [False] * 2])
    state = torch.randn(b, cfg.max_state_dim)
    actions = torch.randn(b, cfg.chunk_size, cfg.max_action_dim)
    noise = torch.randn(b, cfg.chunk_size, cfg.max_action_dim)
    time = torch.tensor([0.3, 0.8])
    return model, [
        (lang_tokens, lang_masks, state, actions),
        (lang_tokens, lang_masks, state, actions, noise, time),
    ]
