"""GM301 bad: FastSpeech2's length regulator sizes its padded buffer with a tensor (the longest total duration).

Simplified: the buffer only, without the per-sample `repeat_interleave` that fills it (GM401's).
Source: huggingface/transformers@v5.23.0:src/transformers/models/fastspeech2_conformer/modeling_fastspeech2_conformer.py:111-119
"""
import torch

torch._dynamo.config.capture_scalar_outputs = True


def padded_buffer(encoded_embeddings: torch.Tensor, duration_labels: torch.Tensor) -> torch.Tensor:
    # Calculate the maximum length needed
    max_len = torch.sum(duration_labels, dim=1).max()

    # Create a padded tensor to hold the results
    hidden_states = torch.zeros(
        (encoded_embeddings.size(0), max_len, encoded_embeddings.size(2)),
        dtype=torch.float,
        device=encoded_embeddings.device,
    )
    return hidden_states + encoded_embeddings.mean(dim=1, keepdim=True)


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    durations = torch.tensor([[1, 2, 0], [3, 1, 1]])
    return padded_buffer, [(torch.randn(2, 3, 4), durations)]


compiled = torch.compile(padded_buffer)

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
