"""Prompt lookup decoding: `find_candidate_pred_tokens` searches the prompt for the trailing n-gram (`.tolist()`, `unfold`, `nonzero`, a Python loop over match indices with tensor comparisons) and returns the continuation as draft tokens.

Source: apoorvumang/prompt-lookup-decoding@eb5c0c1822c3773c59b39c2d5d7d62339a8cbf0b:prompt-lookup-decoding.ipynb:cell 3 (find_candidate_pred_tokens)
Kept: the function verbatim, with its @torch.no_grad() decorator and the ValueError
guard; called as greedy_search_new calls it (`find_candidate_pred_tokens(input_ids, 3)`).
Simplified: nothing inside the function; the surrounding HF greedy_search_new loop is
not part of this program. Token ids are small integers; batch of 1 as in the notebook.
"""
import torch


@torch.no_grad()
def find_candidate_pred_tokens(input_ids, max_ngram_size=3, num_pred_tokens=4):
    input_length = input_ids.size(1)

    # Ensure max_ngram_size and num_pred_tokens are valid
    if max_ngram_size <= 0 or num_pred_tokens <= 0 or max_ngram_size > input_length:
        raise ValueError("Invalid max_ngram_size or num_pred_tokens")

    for ngram_size in range(max_ngram_size, 0, -1):
        # Extract the last n tokens as our search ngram
        ngram = input_ids[0, -ngram_size:].tolist()

        # Create sliding windows of size ngram_size
        windows = input_ids.unfold(dimension=1, size=ngram_size, step=1)

        # Convert ngram to a tensor for comparison
        ngram_tensor = torch.tensor(ngram, device=input_ids.device).unsqueeze(0)

        # Find where the windows match the ngram
        matches = (windows == ngram_tensor).all(dim=2)

        # Get the indices of matches
        match_indices = matches.nonzero(as_tuple=True)[1]

        # Iterate through match indices to find a valid continuation
        for idx in match_indices:
            start_idx = idx + ngram_size
            end_idx = start_idx + num_pred_tokens
            # Ensure we don't go beyond the length of input_ids and avoid self-match
            if end_idx <= input_length and start_idx < input_length - ngram_size:
                return input_ids[0, start_idx:end_idx]

    # If no match is found, return an empty tensor
    return torch.tensor([], dtype=torch.long, device=input_ids.device)


draft = torch.compile(find_candidate_pred_tokens)

RAISING_INPUTS = {3: "ValueError"}


def make():
    # trailing 3-gram [1, 2, 3] occurs earlier with 4 tokens after it
    trigram = torch.tensor([[13, 13, 13, 12, 1, 2, 3, 12, 19, 7, 8, 1, 2, 3]])
    # only the last token (12) occurs earlier
    unigram = torch.tensor([[5, 12, 9, 9, 4, 6, 0, 11, 12]])
    # the trailing tokens occur nowhere else
    no_match = torch.tensor([[1, 2, 3, 4, 5, 6, 7, 8]])
    # prompt shorter than max_ngram_size
    too_short = torch.tensor([[4, 2]])
    return find_candidate_pred_tokens, [(trigram, 3), (unigram, 3), (no_match, 3), (too_short, 3)]
