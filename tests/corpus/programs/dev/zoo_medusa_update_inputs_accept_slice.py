"""Medusa's update_inference_inputs: `best_candidate` and `accept_length` arrive as 0-d tensors from evaluate_posterior and slice `retrieve_indices[best_candidate, : accept_length + 1]`, the KV buffer is copied in place and `current_length_data.fill_(...)` records the new length.

Source: FasterDecoding/Medusa@e2a5d20c048a9b0a4092e6933c34313687422518:medusa/model/utils.py:531-591
Kept: update_inference_inputs verbatim; the greedy evaluate_posterior branch
that produces its tensor arguments (utils.py:458-470); a decode step that
chains them the way MedusaModel.medusa_generate does.
Simplified: the KV cache is one (layers*2, 1, heads, len, dim) tensor as in
kv_cache.initialize_past_key_values; 3 candidates of 4 tokens, vocab 6.
"""
import torch


def evaluate_posterior_greedy(logits, candidates):
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


def update_inference_inputs(
    input_ids,
    candidates,
    best_candidate,
    accept_length,
    retrieve_indices,
    outputs,
    logits,
    medusa_logits,
    new_token,
    past_key_values_data,
    current_length_data,
):
    # Calculate the starting position for new tokens based on the previous input length
    prev_input_len = input_ids.shape[1]
    # Map the best candidate indices to the original indices in the sequence
    select_indices = (
        retrieve_indices[best_candidate, : accept_length + 1] + prev_input_len
    )
    # Append the tokens from the best candidate to the input sequence
    input_ids = torch.cat(
        [input_ids, candidates[None, best_candidate, : accept_length + 1]], dim=-1
    )
    # Update the past key values based on the selected tokens
    # Source tensor that contains relevant past information based on the selected candidate
    tgt = past_key_values_data[..., select_indices, :]
    # Destination tensor where the relevant past information will be stored
    dst = past_key_values_data[..., prev_input_len : prev_input_len + tgt.shape[-2], :]
    # Copy relevant past information from the source to the destination
    dst.copy_(tgt, non_blocking=True)

    # Update the current length tensor (currently only support batch size is 1)
    current_length_data.fill_(prev_input_len + tgt.shape[-2])

    # Extract logits and medusa logits for the accepted tokens
    logits = logits[None, best_candidate, accept_length : accept_length + 1]
    medusa_logits = medusa_logits[
        :, None, best_candidate, accept_length : accept_length + 1
    ]
    # Update the new token counter
    new_token += accept_length + 1

    return input_ids, logits, medusa_logits, new_token


def decode_step(input_ids, candidates, retrieve_indices, logits, medusa_logits, new_token, past_key_values_data, current_length_data):
    best_candidate, accept_length = evaluate_posterior_greedy(logits, candidates)
    return update_inference_inputs(
        input_ids,
        candidates,
        best_candidate,
        accept_length,
        retrieve_indices,
        None,
        logits,
        medusa_logits,
        new_token,
        past_key_values_data,
        current_length_data,
    )


step = torch.compile(decode_step)


def make():
    torch.manual_seed(0)
    input_ids = torch.randint(0, 6, (1, 5))
    logits = torch.randn(3, 4, 6) * 4
    greedy = torch.argmax(logits, dim=-1)
    candidates = torch.cat([torch.zeros(3, 1, dtype=torch.long), greedy[:, :-1]], dim=1)
    candidates[0, 2] = (candidates[0, 2] + 1) % 6
    rejected = (candidates + 1) % 6
    retrieve_indices = torch.tensor([[0, 1, 3, 6], [0, 1, 4, 7], [0, 2, 5, 8]])
    medusa_logits = torch.randn(2, 3, 4, 6)
    past_key_values_data = torch.randn(4, 1, 2, 16, 3)
    current_length_data = torch.zeros(4, dtype=torch.long)
    return decode_step, [
        (input_ids, candidates, retrieve_indices, logits, medusa_logits, 0, past_key_values_data.clone(), current_length_data.clone()),
        (input_ids, rejected, retrieve_indices, logits, medusa_logits, 4, past_key_values_data.clone(), current_length_data.clone()),
    ]
