"""SpecForge `OnlineDFlashModel.forward` in VP-drafter mode: `Categorical(weights).sample(...)` prefix lengths, anchor `.item()`.

Source: sgl-project/SpecForge#592 (https://github.com/sgl-project/SpecForge/pull/592)
The review on this PR flags `torch.distributions.Categorical(weights).sample((bsz, n_blocks))`
in `_sample_prefix_lengths` as causing graph breaks under torch.compile. The wrapper is
translated from sgl-project/SpecForge@b2dc564e:specforge/core/dflash.py (the PR's commit):
`create_dflash_sdpa_mask` and `OnlineDFlashModel` (__init__ validation, _sample_anchor_positions
with `int(valid_counts.max().item())`, _sample_prefix_lengths, prepare_noise_input,
_create_position_ids, _create_noise_embed, _create_vp_noise_embed, _dpace_weight, forward
with its loss_type dispatch and the no_grad accuracy block).
Kept: all of the above as written; the sdpa attention backend; `loss_type="vp_drafter"` with a
decay gamma; compiled as `torch.compile(OnlineDFlashModel(...))`.
Simplified: `DFlashDraftModel` (specforge/modeling/draft/dflash.py) is replaced by a one-layer
stand-in with the same call signature (context + noise keys, boolean SDPA mask); the
flex_attention `create_dflash_block_mask` path is kept but not taken (backend "sdpa");
vocab 32, hidden 16, block_size 4, 3 anchors, sequence 12.
"""
from typing import Optional, Tuple

import torch
import torch.nn as nn
import torch.nn.functional as F


try:
    from torch.nn.attention.flex_attention import BlockMask, create_block_mask

    FLEX_ATTENTION_AVAILABLE = True
except ImportError:
    FLEX_ATTENTION_AVAILABLE = False
    BlockMask = None
    create_block_mask = None

# NPU workaround: flex_attention is not available on Ascend NPU.
if hasattr(torch, "npu") and torch.npu.is_available():
    FLEX_ATTENTION_AVAILABLE = False


_VALID_LOSS_TYPES = {
    "dflash",
    "vp_drafter",
    "dpace",
    "dpace-cumulative-confidence-only",
    "dpace-continuation-value-only",
}
_DPACE_LOSS_TYPES = _VALID_LOSS_TYPES - {"dflash", "vp_drafter"}



def create_dflash_sdpa_mask(anchor_positions, block_keep_mask, S, block_size, device):
    B, N = anchor_positions.shape
    Q_LEN = N * block_size
    KV_LEN = S + N * block_size

    q_indices = torch.arange(Q_LEN, device=device).view(1, 1, -1, 1)  # (1, 1, Q_LEN, 1)
    kv_indices = torch.arange(KV_LEN, device=device).view(
        1, 1, 1, -1
    )  # (1, 1, 1, KV_LEN)

    q_block_ids = q_indices // block_size

    anchor_expanded = anchor_positions.view(B, 1, N, 1).repeat_interleave(
        block_size, dim=2
    )

    mask_context = (kv_indices < S) & (kv_indices < anchor_expanded)

    is_draft = kv_indices >= S
    kv_block_ids = (kv_indices - S) // block_size
    mask_draft = is_draft & (q_block_ids == kv_block_ids)

    valid_block = block_keep_mask.view(B, 1, N, 1).repeat_interleave(block_size, dim=2)

    final_mask = (mask_context | mask_draft) & valid_block
    return final_mask


def create_dflash_block_mask(
    anchor_positions: torch.Tensor,
    block_keep_mask: torch.Tensor,
    S: int,
    block_size: int,
    device: torch.device,
):
    """Construct Flex Attention BlockMask for DFlash training.

    KV: [Context (S tokens) | Block_0 | Block_1 | ... | Block_{n-1}]
    Q:  [Block_0 | Block_1 | ... | Block_{n-1}]

    Rules:
      1. Each block sees context strictly before its anchor (kv_idx < anchor_pos).
      2. Intra-block attention is bidirectional.
      3. Different blocks are invisible to each other.
      4. Invalid blocks (block_keep_mask=False) see nothing.
    """

    def dflash_mask_mod(b, h, q_idx, kv_idx):
        q_block_id = q_idx // block_size
        safe_q_block_id = q_block_id.clamp(max=N - 1)
        anchor_pos = anchor_positions[b, safe_q_block_id]

        is_context = kv_idx < S
        # Strictly less than: matches inference where target_hidden[anchor_pos]
        # is not available as context.
        mask_context = is_context & (kv_idx < anchor_pos)

        is_draft = kv_idx >= S
        kv_block_id = (kv_idx - S) // block_size
        mask_draft = is_draft & (q_block_id == kv_block_id)

        is_valid_block = block_keep_mask[b, safe_q_block_id]
        in_bounds = q_block_id < N
        return (mask_context | mask_draft) & is_valid_block & in_bounds

    B, N = anchor_positions.shape
    Q_LEN = N * block_size
    KV_LEN = S + N * block_size

    return create_block_mask(
        dflash_mask_mod, B=B, H=None, Q_LEN=Q_LEN, KV_LEN=KV_LEN, device=device
    )


class DFlashDraftModel(nn.Module):
    """Stand-in for specforge.modeling.draft.dflash.DFlashDraftModel (same call signature)."""

    def __init__(self, hidden_size, max_positions=64):
        super().__init__()
        self.fc = nn.Linear(hidden_size, hidden_size)
        self.pos = nn.Embedding(max_positions, hidden_size)
        self.q_proj = nn.Linear(hidden_size, hidden_size)
        self.kv_proj = nn.Linear(hidden_size, 2 * hidden_size)
        self.o_proj = nn.Linear(hidden_size, hidden_size)
        self.norm = nn.LayerNorm(hidden_size)

    def forward(self, position_ids, noise_embedding, target_hidden, attention_mask):
        ctx = self.fc(target_hidden)
        x = torch.cat([ctx, noise_embedding], dim=1) + self.pos(position_ids)
        q = self.q_proj(x[:, ctx.shape[1]:]).unsqueeze(1)
        k, v = self.kv_proj(x).unsqueeze(1).chunk(2, dim=-1)
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=attention_mask)
        return self.norm(self.o_proj(out.squeeze(1)) + noise_embedding)


class OnlineDFlashModel(nn.Module):
    """DFlash online training wrapper with DFlash and D-PACE losses."""

    def __init__(
        self,
        draft_model: DFlashDraftModel,
        target_lm_head: nn.Module,
        target_embed_tokens: nn.Module,
        mask_token_id: int,
        block_size: int = 16,
        attention_backend: str = "flex_attention",
        num_anchors: int = 512,
        loss_decay_gamma: Optional[float] = None,
        loss_type: str = "dflash",
        dpace_alpha: float = 0.5,
        prefix_weight_base: float = 0.9,
    ):
        super().__init__()
        if loss_type not in _VALID_LOSS_TYPES:
            raise ValueError(
                f"loss_type={loss_type!r}; must be one of {sorted(_VALID_LOSS_TYPES)}"
            )
        if not 0.0 <= dpace_alpha <= 1.0:
            raise ValueError(f"dpace_alpha must be in [0, 1], got {dpace_alpha}")
        if prefix_weight_base <= 0.0:
            raise ValueError(
                f"prefix_weight_base must be positive, got {prefix_weight_base}"
            )

        self.draft_model = draft_model
        self.lm_head = target_lm_head
        self.embed_tokens = target_embed_tokens
        self.block_size = block_size
        self.mask_token_id = mask_token_id
        self.attention_backend = attention_backend
        self.num_anchors = num_anchors
        self.loss_decay_gamma = loss_decay_gamma
        self.loss_type = loss_type
        self.dpace_alpha = dpace_alpha
        self.prefix_weight_base = prefix_weight_base

        self._cached_block_mask: Optional[BlockMask] = None
        self._cached_seq_len: Optional[int] = None
        self._cached_bsz: Optional[int] = None

    def _sample_anchor_positions(
        self, seq_len: int, loss_mask: torch.Tensor, device: torch.device
    ) -> Tuple[torch.Tensor, torch.Tensor]:
        """Randomly sample anchor positions per sample; returns (anchors, keep_mask)."""
        bs = self.block_size
        bsz = loss_mask.shape[0]
        max_anchor = max(seq_len - bs, 0)

        valid = loss_mask[:, : max_anchor + 1] > 0.5
        valid_counts = valid.sum(dim=1)
        max_n = min(self.num_anchors, int(valid_counts.max().item()) - 1)

        if max_n <= 0:
            raise ValueError("should preprocess the data.")

        indices = (
            torch.arange(max_anchor + 1, device=device).unsqueeze(0).expand(bsz, -1)
        )
        masked_indices = torch.where(
            valid, indices, torch.tensor(seq_len + 1, device=device)
        )

        random_vals = torch.rand(bsz, max_anchor + 1, device=device)
        random_vals = torch.where(valid, random_vals, torch.tensor(2.0, device=device))

        _, sorted_idx = random_vals.sort(dim=1)
        gathered = torch.gather(masked_indices, 1, sorted_idx)
        anchors = gathered[:, :max_n].sort(dim=1).values

        keep_mask = torch.arange(max_n, device=device).unsqueeze(
            0
        ) < valid_counts.unsqueeze(1).clamp(max=max_n)
        anchors = torch.where(
            keep_mask, anchors, torch.tensor(0, dtype=torch.long, device=device)
        )

        return anchors, keep_mask

    def _sample_prefix_lengths(
        self, bsz: int, n_blocks: int, device: torch.device
    ) -> torch.Tensor:
        """Sample visible prefix lengths for VP-Drafter training.

        A prefix length i means block positions [0, i) are visible real tokens and
        positions [i, block_size) are masked prediction targets. The sampled
        range follows D2SD's variable-prefix recipe while avoiding the degenerate
        fixed-anchor DFlash case.
        """
        min_prefix = min(2, self.block_size - 1)
        max_prefix = self.block_size - 1
        if max_prefix <= min_prefix:
            return torch.full((bsz, n_blocks), min_prefix, dtype=torch.long, device=device)

        prefix_ids = torch.arange(min_prefix, max_prefix + 1, device=device)
        weights = torch.pow(
            torch.full_like(prefix_ids, self.prefix_weight_base, dtype=torch.float32),
            prefix_ids.float(),
        )
        weights = weights / weights.sum()
        samples = torch.distributions.Categorical(weights).sample((bsz, n_blocks))
        return samples + min_prefix

    def prepare_noise_input(
        self, input_ids: torch.Tensor, block_ids: Optional[torch.Tensor] = None
    ) -> torch.Tensor:
        """Prepare noise input: first token of each block is real, rest are MASK."""
        bsz, seq_len = input_ids.shape
        device = input_ids.device

        if block_ids is not None:
            is_block_start = torch.ones(bsz, seq_len, dtype=torch.bool, device=device)
            is_block_start[:, 1:] = block_ids[:, 1:] != block_ids[:, :-1]
        else:
            positions = torch.arange(seq_len, device=device)
            is_block_start = (positions % self.block_size) == 0
            is_block_start = is_block_start.unsqueeze(0).expand(bsz, -1)

        noise_input_ids = torch.full_like(input_ids, self.mask_token_id)
        noise_input_ids[is_block_start] = input_ids[is_block_start]
        return noise_input_ids

    def _create_position_ids(self, anchor_positions: torch.Tensor) -> torch.Tensor:
        """Create absolute position IDs for parallel draft blocks."""
        bsz, n_blocks = anchor_positions.shape
        device = anchor_positions.device
        offsets = torch.arange(self.block_size, device=device).view(1, 1, -1)
        pos_ids = anchor_positions.unsqueeze(-1) + offsets
        return pos_ids.view(bsz, -1)

    def _create_noise_embed(self, input_ids, anchor_positions, block_keep_mask):
        bsz, seq_len = input_ids.shape
        n = anchor_positions.shape[1]
        bs = self.block_size
        device = input_ids.device

        noise_ids = torch.full(
            (bsz, n * bs), self.mask_token_id, dtype=torch.long, device=device
        )

        block_starts = torch.arange(n, device=device) * bs
        block_starts = block_starts.unsqueeze(0).expand(bsz, -1)

        valid_anchor_positions = anchor_positions.clamp(0, seq_len - 1)
        anchor_tokens = torch.gather(input_ids, 1, valid_anchor_positions)

        flat_batch_idx = torch.arange(bsz, device=device).unsqueeze(1).expand(bsz, n)
        noise_ids[flat_batch_idx, block_starts] = torch.where(
            block_keep_mask,
            anchor_tokens,
            torch.tensor(self.mask_token_id, dtype=torch.long, device=device),
        )

        return self.embed_tokens(noise_ids)

    def _create_vp_noise_embed(
        self,
        input_ids: torch.Tensor,
        anchor_positions: torch.Tensor,
        block_keep_mask: torch.Tensor,
        prefix_lengths: torch.Tensor,
    ) -> torch.Tensor:
        """Prepare VP-Drafter inputs with variable visible prefixes."""
        bsz, seq_len = input_ids.shape
        n = anchor_positions.shape[1]
        bs = self.block_size
        device = input_ids.device

        offsets = torch.arange(bs, device=device).view(1, 1, -1)
        token_positions = anchor_positions.unsqueeze(-1) + offsets
        safe_positions = token_positions.clamp(0, seq_len - 1)

        real_tokens = torch.gather(
            input_ids.unsqueeze(1).expand(-1, n, -1),
            2,
            safe_positions,
        )
        visible_prefix = offsets < prefix_lengths.unsqueeze(-1)
        valid_positions = token_positions < seq_len
        fill_mask = visible_prefix & block_keep_mask.unsqueeze(-1) & valid_positions

        mask_tokens = torch.full_like(real_tokens, self.mask_token_id)
        noise_ids = torch.where(fill_mask, real_tokens, mask_tokens)
        return self.embed_tokens(noise_ids.view(bsz, n * bs))

    def _dpace_weight(
        self,
        prob: torch.Tensor,
        binary_mask: torch.Tensor,
        binary_mask_b: torch.Tensor,
        loss_type: str,
    ) -> torch.Tensor:
        """Compute detached D-PACE position weights.

        ``prob`` is the draft probability on the target token at each draft
        position. Invalid positions are treated as multiplicative no-ops inside
        prefix products and excluded from suffix sums; the caller still
        multiplies the returned weights by ``binary_mask`` before reduction.
        """
        smooth = (1.0 - self.dpace_alpha) * prob + self.dpace_alpha
        smooth = torch.where(binary_mask_b, smooth, torch.ones_like(smooth))
        prefix = torch.cumprod(smooth, dim=-1)

        if loss_type == "dpace-cumulative-confidence-only":
            return prefix

        suffix = torch.flip(
            torch.cumsum(torch.flip(prefix * binary_mask, dims=[-1]), dim=-1),
            dims=[-1],
        )

        if loss_type == "dpace":
            return suffix
        if loss_type == "dpace-continuation-value-only":
            return suffix / prefix.clamp_min(torch.finfo(prefix.dtype).tiny)
        raise ValueError(f"unknown D-PACE loss_type {loss_type!r}")

    def forward(
        self,
        input_ids: torch.Tensor,
        hidden_states: torch.Tensor,
        loss_mask: torch.Tensor,
    ) -> Tuple[torch.Tensor, torch.Tensor]:
        """Parallel block-wise training forward pass."""
        if self.attention_backend == "flex_attention" and not FLEX_ATTENTION_AVAILABLE:
            raise ValueError(
                "flex_attention is not available on this device; use sdpa/eager."
            )
        bsz, seq_len = input_ids.shape
        device = input_ids.device

        anchor_positions, block_keep_mask = self._sample_anchor_positions(
            seq_len, loss_mask, device
        )

        prefix_lengths = None
        if self.loss_type == "vp_drafter":
            prefix_lengths = self._sample_prefix_lengths(
                bsz, anchor_positions.shape[1], device
            )
            noise_embedding = self._create_vp_noise_embed(
                input_ids, anchor_positions, block_keep_mask, prefix_lengths
            )
        else:
            noise_embedding = self._create_noise_embed(
                input_ids, anchor_positions, block_keep_mask
            )

        context_position_ids = (
            torch.arange(seq_len, device=device).unsqueeze(0).expand(bsz, -1)
        )
        draft_position_ids = self._create_position_ids(anchor_positions)
        full_position_ids = torch.cat([context_position_ids, draft_position_ids], dim=1)

        if self.attention_backend == "flex_attention":
            dflash_attn_mask = create_dflash_block_mask(
                anchor_positions=anchor_positions,
                block_keep_mask=block_keep_mask,
                S=seq_len,
                block_size=self.block_size,
                device=device,
            )
        else:
            dflash_attn_mask = create_dflash_sdpa_mask(
                anchor_positions=anchor_positions,
                block_keep_mask=block_keep_mask,
                S=seq_len,
                block_size=self.block_size,
                device=device,
            )

        output_hidden = self.draft_model(
            position_ids=full_position_ids,
            noise_embedding=noise_embedding,
            target_hidden=hidden_states,
            attention_mask=dflash_attn_mask,
        )

        logits = self.lm_head(output_hidden)

        # --- Labels: same-position prediction (position k predicts token anchor+k) ---
        label_offsets = torch.arange(0, self.block_size, device=device).view(1, 1, -1)
        label_indices = anchor_positions.unsqueeze(-1) + label_offsets
        valid_label_mask = label_indices < seq_len
        safe_label_indices = label_indices.clamp(max=seq_len - 1)

        target_ids = torch.gather(
            input_ids.unsqueeze(1).expand(-1, anchor_positions.size(1), -1),
            2,
            safe_label_indices,
        )

        # --- Weight mask: block validity * bounds * exclude anchor (pos 0) * loss_mask ---
        weight_mask = (
            block_keep_mask.unsqueeze(-1).expand(-1, -1, self.block_size).float()
        )
        weight_mask = weight_mask * valid_label_mask.float()

        pos_in_block = torch.arange(self.block_size, device=device).view(1, 1, -1)
        if self.loss_type == "vp_drafter":
            weight_mask = weight_mask * (
                pos_in_block >= prefix_lengths.unsqueeze(-1)
            ).float()
        else:
            weight_mask = weight_mask * (pos_in_block > 0).float()

        original_loss_mask_gathered = torch.gather(
            loss_mask.unsqueeze(1).expand(-1, anchor_positions.size(1), -1),
            2,
            safe_label_indices,
        )
        weight_mask = weight_mask * original_loss_mask_gathered

        binary_eval_mask = weight_mask.view(-1)

        # --- Cross entropy ---
        flat_logits = logits.view(-1, logits.size(-1))
        flat_targets = target_ids.view(-1)

        loss_per_token = F.cross_entropy(flat_logits, flat_targets, reduction="none")

        if self.loss_type == "dflash":
            # Preserve the existing DFlash weighted-mean behavior.
            loss_weights = weight_mask
            if self.loss_decay_gamma is not None and self.loss_decay_gamma > 0:
                k = torch.arange(self.block_size, device=device).view(1, 1, -1)
                decay_weights = torch.exp(
                    -(k - 1).clamp(min=0).float() / self.loss_decay_gamma
                )
                loss_weights = loss_weights * decay_weights

            flat_weights = loss_weights.view(-1)
            valid_token_count = flat_weights.sum() + 1e-6
            loss = (loss_per_token * flat_weights).sum() / valid_token_count
        elif self.loss_type == "vp_drafter":
            loss_weights = weight_mask
            if self.loss_decay_gamma is not None and self.loss_decay_gamma > 0:
                k = torch.arange(self.block_size, device=device).view(1, 1, -1)
                effective_pos = (
                    k.float() - prefix_lengths.unsqueeze(-1).float()
                ).clamp(min=0)
                decay_weights = torch.exp(-effective_pos / self.loss_decay_gamma)
                loss_weights = loss_weights * decay_weights

            flat_weights = loss_weights.view(-1)
            valid_token_count = flat_weights.sum() + 1e-6
            loss = (loss_per_token * flat_weights).sum() / valid_token_count
        elif self.loss_type in _DPACE_LOSS_TYPES:
            neg_log_q = loss_per_token.view_as(target_ids)
            with torch.no_grad():
                q = torch.exp(-neg_log_q)
                dpace_weights = self._dpace_weight(
                    q,
                    weight_mask,
                    weight_mask > 0,
                    self.loss_type,
                )
            loss_weights = weight_mask * dpace_weights
            loss = (neg_log_q * loss_weights).sum() / float(bsz)
        else:
            raise ValueError(f"unknown loss_type {self.loss_type!r}")

        # --- Accuracy ---
        with torch.no_grad():
            pred_ids = torch.argmax(flat_logits, dim=-1)
            correct = (pred_ids == flat_targets) & (binary_eval_mask > 0.5)
            actual_token_count = binary_eval_mask.sum() + 1e-6
            accuracy = correct.sum().float() / actual_token_count

        return loss, accuracy


def build_model():
    torch.manual_seed(0)
    hidden, vocab = 16, 32
    return OnlineDFlashModel(
        draft_model=DFlashDraftModel(hidden),
        target_lm_head=nn.Linear(hidden, vocab, bias=False),
        target_embed_tokens=nn.Embedding(vocab, hidden),
        mask_token_id=31,
        block_size=4,
        attention_backend="sdpa",
        num_anchors=3,
        loss_decay_gamma=4.0,
        loss_type="vp_drafter",
        prefix_weight_base=0.9,
    )


model = torch.compile(build_model())


def make():
    m = build_model()
    torch.manual_seed(0)
    input_ids = torch.randint(0, 31, (2, 12))
    hidden_states = torch.randn(2, 12, 16)
    loss_mask = torch.ones(2, 12)
    loss_mask[1, :3] = 0.0
    return m, [(input_ids, hidden_states, loss_mask)]
