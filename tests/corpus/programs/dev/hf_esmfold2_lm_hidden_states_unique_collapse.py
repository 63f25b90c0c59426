"""ESMFold2 language-model features: per-row boolean-mask reads, `torch.unique(keys, dim=0, return_inverse=True)` collapse of residues, a loop over `asym_collapsed.unique()` chains with `nonzero`, host-side lengths and chain counts choosing the mask.

Source: huggingface/transformers@v5.23.0:src/transformers/models/esmfold2/modeling_esmfold2.py:1930-2044
Kept: EsmFold2Model._compute_lm_hidden_states verbatim (under
`@torch.no_grad()`): the per-row protein mask reads, the (asym_id,
residue_index) key collapse with unique / scatter_reduce_(amin) / argsort,
the chain loop building `[BOS] chain [EOS BOS] ... [EOS]`, the expand maps,
padding to `max(lm_lengths)`, `sequence_id` from BOS cumsum, the
`max_chains > 1` choice of mask kwargs, the bf16 autocast decided from the
LM's parameter dtype, and the scatter of LM hidden states back per token.
Simplified: the ESMC language model is an embedding plus two linear layers
returning its hidden states as a tuple (it ignores the mask kwargs except
for a padding multiply); vocab 12, hidden 6.
"""
import torch
from torch import Tensor, nn


class EsmcConfig:
    vocab_size = 12
    hidden_size = 6
    bos_token_id = 0
    eos_token_id = 2
    pad_token_id = 1


class EsmFold2Config:
    esmc_config = EsmcConfig()


class EsmcOutput:
    def __init__(self, hidden_states):
        self.hidden_states = hidden_states


class Esmc(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.embed = nn.Embedding(config.vocab_size, config.hidden_size)
        self.layers = nn.ModuleList([nn.Linear(config.hidden_size, config.hidden_size) for _ in range(2)])

    def forward(self, input_ids, output_hidden_states=True, attention_mask=None, sequence_id=None):
        keep = attention_mask if attention_mask is not None else sequence_id >= 0
        hidden = self.embed(input_ids) * keep[..., None]
        hidden_states = (hidden,)
        for layer in self.layers:
            hidden = torch.tanh(layer(hidden))
            hidden_states = hidden_states + (hidden,)
        return EsmcOutput(hidden_states)


class EsmFold2Model(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.esmc = Esmc(config.esmc_config)

    @property
    def device(self):
        return next(self.parameters()).device

    @torch.no_grad()
    def _compute_lm_hidden_states(
        self,
        input_ids: Tensor,
        asym_id: Tensor,
        residue_index: Tensor,
        mol_type: Tensor,
        attention_mask: Tensor,
    ) -> Tensor:
        batch_size, num_tokens = input_ids.shape
        device = input_ids.device
        esmc_config = self.config.esmc_config
        bos_id, eos_id, pad_id = esmc_config.bos_token_id, esmc_config.eos_token_id, esmc_config.pad_token_id
        protein_mask = (mol_type == 0) & attention_mask

        lm_input_list = []
        lm_lengths = []
        # Per-batch maps from (original protein-token index) to (LM input position).
        expand_maps: list[Tensor] = []
        # Largest number of chains in any row, which decides how the backbone is masked below.
        max_chains = 0
        for b in range(batch_size):
            mask_row = protein_mask[b]
            ids_row = input_ids[b][mask_row]
            asym_row = asym_id[b][mask_row]
            res_row = residue_index[b][mask_row]

            # Keep the first token per (asym_id, residue_index) key, in input order.
            keys = torch.stack((asym_row, res_row), dim=1)
            unique_keys, inverse = torch.unique(keys, dim=0, return_inverse=True)
            num_unique_residues = unique_keys.size(0)
            token_positions = torch.arange(keys.size(0), device=device, dtype=torch.long)
            first_pos = torch.full((num_unique_residues,), keys.size(0), device=device, dtype=torch.long)
            first_pos.scatter_reduce_(0, inverse, token_positions, reduce="amin", include_self=True)
            ordered = torch.argsort(first_pos)
            first_pos_ordered = first_pos[ordered]
            ids_collapsed = ids_row[first_pos_ordered]
            asym_collapsed = asym_row[first_pos_ordered]
            remap = torch.empty_like(ordered)
            remap[ordered] = torch.arange(num_unique_residues, device=device, dtype=torch.long)
            inverse_ordered = remap[inverse]

            chain_ids = asym_collapsed.unique(sorted=True)
            max_chains = max(max_chains, len(chain_ids))
            # [BOS] chain1 [EOS BOS] chain2 ... [EOS]
            parts: list[Tensor] = [torch.tensor([bos_id], device=device, dtype=ids_row.dtype)]
            # Per-chain LM positions accumulate; track them for the expand map.
            per_token_lm_pos = torch.empty(num_unique_residues, device=device, dtype=torch.long)
            cursor = 1  # position 0 is the leading BOS
            for i, chain_id in enumerate(chain_ids):
                in_chain = (asym_collapsed == chain_id).nonzero(as_tuple=True)[0]
                parts.append(ids_collapsed[in_chain])
                per_token_lm_pos[in_chain] = torch.arange(
                    cursor, cursor + in_chain.shape[0], device=device, dtype=torch.long
                )
                cursor += in_chain.shape[0]
                if i < len(chain_ids) - 1:
                    parts.append(torch.tensor([eos_id, bos_id], device=device, dtype=ids_row.dtype))
                    cursor += 2  # EOS + BOS
            parts.append(torch.tensor([eos_id], device=device, dtype=ids_row.dtype))
            lm_seq = torch.cat(parts)
            lm_input_list.append(lm_seq)
            lm_lengths.append(lm_seq.shape[0])

            # Original protein-token position → LM input position.
            prot_pos_row = mask_row.nonzero(as_tuple=True)[0]
            expand_map = torch.full((num_tokens,), -1, device=device, dtype=torch.long)
            expand_map[prot_pos_row] = per_token_lm_pos[inverse_ordered]
            expand_maps.append(expand_map)

        # Pad to the longest LM input.
        max_len = max(lm_lengths)
        lm_input_ids = torch.full((batch_size, max_len), pad_id, device=device, dtype=input_ids.dtype)
        for b in range(batch_size):
            lm_input_ids[b, : lm_lengths[b]] = lm_input_list[b]

        # sequence_id for chain-aware attention; PAD tokens get -1 (no attention).
        sequence_id = (lm_input_ids == bos_id).cumsum(dim=1) - 1  # each BOS starts a new chain
        sequence_id = sequence_id.masked_fill(lm_input_ids == pad_id, -1)

        # Chain-aware masking is only needed when a row holds more than one chain. With a single
        # chain the two spellings agree wherever it matters: ``sequence_id`` equality gives
        # valid<->valid plus pad<->pad, a padding mask gives valid<->valid plus padded *query* rows
        # whose outputs are never gathered below. Preferring the padding mask keeps flash attention
        # available for the backbone, which dominates the cost of a fold, and matches the reference
        # (it refuses only multi-chain inputs under flash attention). The choice is made here from a
        # host-side chain count, so the backbone's forward keeps no data-dependent branch.
        mask_kwargs = {"sequence_id": sequence_id} if max_chains > 1 else {"attention_mask": sequence_id >= 0}

        use_amp = next(self.esmc.parameters()).dtype == torch.bfloat16
        with torch.autocast(device_type=self.device.type, dtype=torch.bfloat16, enabled=use_amp):
            esmc_out = self.esmc(input_ids=lm_input_ids, output_hidden_states=True, **mask_kwargs)

        # Stack the per-layer tuple into the single tensor the projection expects.
        lm_hidden_states = torch.stack(
            esmc_out.hidden_states, dim=0
        )  # [num_esmc_layers + 1, batch_size, max_len, lm_hidden_size]
        num_layers_plus_one, _, _, lm_hidden_size = lm_hidden_states.shape
        result = torch.zeros(
            batch_size, num_tokens, num_layers_plus_one, lm_hidden_size, device=device, dtype=lm_hidden_states.dtype
        )
        for b in range(batch_size):
            row_mask = protein_mask[b]
            lm_positions = expand_maps[b][row_mask]  # [num_protein_tokens] LM positions
            # lm_hidden_states[:, b, lm_positions, :] -> [num_esmc_layers + 1, num_protein_tokens, lm_hidden_size]
            gathered = lm_hidden_states[:, b, lm_positions, :].permute(1, 0, 2)
            result[b, row_mask.nonzero(as_tuple=True)[0]] = gathered

        return result

    def forward(self, input_ids, asym_id, residue_index, mol_type, attention_mask):
        lm_hidden_states = self._compute_lm_hidden_states(input_ids, asym_id, residue_index, mol_type, attention_mask)
        return lm_hidden_states.mean(dim=2)


model = torch.compile(EsmFold2Model(EsmFold2Config()).eval())


def make():
    torch.manual_seed(0)
    input_ids = torch.randint(3, 12, (2, 7))
    # row 0: one chain, tokens 3 and 4 are one atom-tokenized residue; row 1: two chains and a ligand token
    asym_id = torch.tensor([[0, 0, 0, 0, 0, 0, 0], [0, 0, 0, 1, 1, 1, 2]])
    residue_index = torch.tensor([[0, 1, 2, 3, 3, 4, 5], [0, 1, 2, 0, 1, 2, 0]])
    mol_type = torch.tensor([[0, 0, 0, 0, 0, 0, 0], [0, 0, 0, 0, 0, 0, 3]])
    attention_mask = torch.tensor([[1, 1, 1, 1, 1, 1, 0], [1, 1, 1, 1, 1, 1, 1]], dtype=torch.bool)
    return EsmFold2Model(EsmFold2Config()).eval(), [
        (input_ids, asym_id, residue_index, mol_type, attention_mask),
        (input_ids[:1], asym_id[:1], residue_index[:1], mol_type[:1], attention_mask[:1]),
    ]
