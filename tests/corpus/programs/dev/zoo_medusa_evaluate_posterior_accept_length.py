"""Medusa's evaluate_posterior: `accept_length = candidates_accept_length.max()` decides `if accept_length == 0`, the typical path picks `torch.where(candidates_accept_length == accept_length)[0]` and slices `candidates_prob[best_candidates, :accept_length]`.

Source: FasterDecoding/Medusa@e2a5d20c048a9b0a4092e6933c34313687422518:medusa/model/utils.py:350-529
Kept: get_nucleus_posterior_mask and evaluate_posterior verbatim for the
greedy (temperature == 0), fast typical and nucleus paths.
Simplified: the non-fast typical path is dropped (at this commit it calls
get_typical_posterior_mask with one argument too many); 3 candidates of
4 tokens over a vocabulary of 6.
"""
import torch
import torch.nn.functional as F


def get_nucleus_posterior_mask(logits, candidates, temperature, top_p):
    # adapted from https://github.com/huggingface/transformers/blob/18a879f47576822aa1a5c49aecb27d89bfa5fa69/examples/run_generation.py#L79

    # Apply temperature
    logits = logits[:, :-1] / temperature
    n_samples, n_tokens = logits.shape[0], logits.shape[1]
    logits = logits.view(n_samples*n_tokens, -1)
    if top_p >= 1:
        sampled_tokens = torch.multinomial(F.softmax(logits, dim=-1), 1)
        sampled_tokens = sampled_tokens.view(n_samples, n_tokens)
        posterior_mask = (candidates[:, 1:] == sampled_tokens).int()
        return posterior_mask
    # Convert to probabilities (softmax)
    probs = F.softmax(logits, dim=-1)
    # Sort the probabilities
    sorted_logits, sorted_indices = torch.sort(probs, descending=True)

    # Compute cumulative probabilities
    cum_probs = torch.cumsum(sorted_logits, dim=-1)

    # Create mask for the top-p nucleus
    sorted_indices_to_remove = cum_probs > top_p
    sorted_indices_to_remove[..., 1:] = sorted_indices_to_remove[..., :-1].clone()
    sorted_indices_to_remove[..., 0] = 0

    indices_to_remove = sorted_indices_to_remove.scatter(dim=1, index=sorted_indices, src=sorted_indices_to_remove)

    # Remove low-probability tokens
    logits[indices_to_remove] = float('-inf')
    # Sample from the remaining tokens
    sampled_tokens = torch.multinomial(F.softmax(logits, dim=-1), 1)
    sampled_tokens = sampled_tokens.view(n_samples, n_tokens)
    # Create a mask for selected tokens
    posterior_mask = (candidates[:, 1:] == sampled_tokens).int()

    return posterior_mask


def evaluate_posterior(
    logits, candidates, temperature, posterior_threshold=0.3, posterior_alpha = 0.09, top_p=0.8, sampling = 'typical', fast = True
):
    # Greedy decoding based on temperature value
    if temperature == 0:
        # Find the tokens that match the maximum logits for each position in the sequence
        posterior_mask = (
            candidates[:, 1:] == torch.argmax(logits[:, :-1], dim=-1)
        ).int()
        candidates_accept_length = (torch.cumprod(posterior_mask, dim=1)).sum(dim=1)
        accept_length = candidates_accept_length.max()
        # Choose the best candidate
        if accept_length == 0:
            # Default to the first candidate if none are accepted
            best_candidate = torch.tensor(0, dtype=torch.long, device=candidates.device)
        else:
            best_candidate = torch.argmax(candidates_accept_length).to(torch.long)
        return best_candidate, accept_length

    if sampling == 'typical':
        if fast:
            posterior_prob = torch.softmax(logits[:, :-1] / temperature, dim=-1)
            candidates_prob = torch.gather(
                posterior_prob, dim=-1, index=candidates[:, 1:].unsqueeze(-1)
            ).squeeze(-1)
            posterior_entropy = -torch.sum(
                posterior_prob * torch.log(posterior_prob + 1e-5), dim=-1
            )  # torch.sum(torch.log(*)) is faster than torch.prod
            threshold = torch.minimum(
                torch.ones_like(posterior_entropy) * posterior_threshold,
                torch.exp(-posterior_entropy) * posterior_alpha,
            )
            posterior_mask = candidates_prob > threshold
            candidates_accept_length = (torch.cumprod(posterior_mask, dim=1)).sum(dim=1)

            # Choose the best candidate based on the evaluated posterior probabilities
            accept_length = candidates_accept_length.max()
            if accept_length == 0:
                # If no candidates are accepted, just choose the first one
                best_candidate = torch.tensor(0, dtype=torch.long, device=candidates.device)
            else:
                best_candidates = torch.where(candidates_accept_length == accept_length)[0]
                # Accept the best one according to likelihood
                likelihood = torch.sum(
                    torch.log(candidates_prob[best_candidates, :accept_length]), dim=-1
                )
                best_candidate = best_candidates[torch.argmax(likelihood)]
            return best_candidate, accept_length
        raise NotImplementedError("the non-fast typical path is not part of this program")

    if sampling == 'nucleus':
        assert top_p < 1.0 + 1e-6, "top_p should between 0 and 1"
        posterior_mask = get_nucleus_posterior_mask(logits, candidates, temperature, top_p)
        candidates_accept_length = (torch.cumprod(posterior_mask, dim=1)).sum(dim=1)
        accept_length = candidates_accept_length.max()
        # Choose the best candidate
        if accept_length == 0:
            # Default to the first candidate if none are accepted
            best_candidate = torch.tensor(0, dtype=torch.long, device=candidates.device)
        else:
            best_candidate = torch.argmax(candidates_accept_length).to(torch.long)
        return best_candidate, accept_length
    else:
        raise NotImplementedError


compiled_evaluate_posterior = torch.compile(evaluate_posterior, dynamic=False)


def make():
    torch.manual_seed(0)
    logits = torch.randn(3, 4, 6) * 4
    greedy = torch.argmax(logits, dim=-1)
    # candidate 1 follows the argmax for two steps, the others diverge at once
    matching = torch.cat([torch.zeros(3, 1, dtype=torch.long), greedy[:, :-1]], dim=1)
    matching[0, 1] = (matching[0, 1] + 1) % 6
    matching[2, 1] = (matching[2, 1] + 1) % 6
    matching[1, 3] = (matching[1, 3] + 1) % 6
    rejected = (matching + 1) % 6
    rejected[:, 0] = 0
    return evaluate_posterior, [
        (logits, matching, 0),
        (logits, rejected, 0),
        (logits, matching, 0.7, 0.3, 0.09, 0.8, 'typical', True),
        (logits, rejected, 0.7, 0.3, 0.09, 0.8, 'typical', True),
        (logits, matching, 0.7, 0.3, 0.09, 0.5, 'nucleus'),
        (logits, rejected, 0.7, 0.3, 0.09, 0.9, 'nucleus'),
    ]
