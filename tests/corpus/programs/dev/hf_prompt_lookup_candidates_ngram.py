"""Prompt-lookup candidate generator: unfold n-gram windows, `nonzero` the matches, iterate the match tensor, crop at the first eos via `.item()`.

Source: huggingface/transformers@v5.23.0:src/transformers/generation/candidate_generator.py:1013-1151
Kept: PromptLookupCandidateGenerator.__init__ (with its ValueError) and
get_candidates: the `max_length == input_length + 1` early return, the
n-gram loop from the largest size down, `unfold` windows compared with the
trailing n-gram, `matches.nonzero(as_tuple=True)[1]`, the loop over match
indices with tensor `start_idx` / `min(...)` slice bounds, the eos crop with
`torch.isin` / `torch.nonzero` / `match_indices_eos[0].item()`, and the
final concatenation.
Simplified: the `logits_processor` forbidden-token crop is left out
(`logits_processor=None`, the default); eos is a 1-element tensor.
"""
import torch


class CandidateGenerator:
    def get_candidates(self, input_ids: torch.LongTensor):
        raise NotImplementedError(
            f"{self.__class__} is an abstract class. Only classes inheriting this class can call `get_candidates`."
        )


class PromptLookupCandidateGenerator(CandidateGenerator):
    def __init__(
        self,
        eos_token_id=None,
        num_output_tokens: int = 10,
        max_matching_ngram_size: int = 2,
        max_length: int = 20,
    ):
        self.num_output_tokens = num_output_tokens
        self.max_matching_ngram_size = max_matching_ngram_size
        self.max_length = max_length
        self.eos_token_id = eos_token_id

        if self.max_matching_ngram_size <= 0 or self.num_output_tokens <= 0:
            raise ValueError("Invalid max_matching_ngram_size or num_output_tokens")

    def get_candidates(self, input_ids: torch.LongTensor):
        bsz, input_length = input_ids.shape

        # Don't generate more than `max_length - 1` candidates since the target model generates one extra token.
        if self.max_length == input_length + 1:
            return input_ids, None

        chosen_ids = None
        match_found = False
        for ngram_size in range(min(self.max_matching_ngram_size, input_length - 1), 0, -1):
            # Create sliding windows of size ngram_size
            windows = input_ids.unfold(dimension=1, size=ngram_size, step=1)

            # Convert ngram to a tensor for comparison
            ngram_tensor = input_ids[0, -ngram_size:]

            # Find where the windows match the ngram
            matches = (windows == ngram_tensor).all(dim=2)

            # Get the indices of matches
            match_indices = matches.nonzero(as_tuple=True)[1]

            # Iterate through match indices to find a valid continuation
            for idx in match_indices:
                start_idx = idx + ngram_size
                end_idx = start_idx + self.num_output_tokens
                end_idx = min(end_idx, input_length, self.max_length)

                if start_idx < end_idx:
                    chosen_ids = input_ids[0, start_idx:end_idx]
                    match_found = True

                    # remove remaining candidate ids if an "eos" token is found, otherwise the target model may
                    # accept eos and the rest as valid, thus not stopping generation after "eos"
                    if self.eos_token_id is not None:
                        mask = torch.isin(chosen_ids, self.eos_token_id)
                        match_indices_eos = torch.nonzero(mask)
                        if match_indices_eos.numel() > 0:
                            first_eos_index = match_indices_eos[0].item()
                            chosen_ids = chosen_ids[:first_eos_index]
                    break
            if match_found:
                break

        # In case we didn't find a match return the input sequence unchanged, reverts back to autoregressive decoding
        if not match_found or chosen_ids is None or len(chosen_ids) == 0:
            return input_ids, None

        # Now need extend input_ids with chosen_ids
        chosen_ids = chosen_ids.unsqueeze(0)
        candidate_input_ids = torch.cat((input_ids, chosen_ids), dim=1)
        return candidate_input_ids, None


candidate_generator = PromptLookupCandidateGenerator(eos_token_id=torch.tensor([2]), num_output_tokens=4)
get_candidates = torch.compile(candidate_generator.get_candidates, backend="eager")


def make():
    generator = PromptLookupCandidateGenerator(eos_token_id=torch.tensor([2]), num_output_tokens=4)
    repeat = torch.tensor([[5, 6, 7, 8, 9, 5, 6]])  # "5 6" seen before: propose "7 8 9 5"
    with_eos = torch.tensor([[5, 6, 7, 2, 9, 5, 6]])  # the proposal stops before eos
    no_match = torch.tensor([[3, 4, 5, 6, 7, 8, 9]])
    at_limit = torch.arange(19)[None]
    return generator.get_candidates, [(repeat,), (with_eos,), (no_match,), (at_limit,)]
