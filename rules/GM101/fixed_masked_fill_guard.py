"""GM101 bad: a tensor guard around a boolean-mask fill (FastSpeech2-Conformer's length regulator).

Source: huggingface/transformers@v5.23.0:src/transformers/models/fastspeech2_conformer/modeling_fastspeech2_conformer.py:108-109
(shortened: the durations scale the embeddings instead of repeating them, which breaks on its own)
"""
import torch


def length_regulator(encoded_embeddings: torch.Tensor, duration_labels: torch.Tensor) -> torch.Tensor:
    if torch.compiler.is_compiling():
        duration_labels[duration_labels.sum(dim=1).eq(0) & (duration_labels.sum() == 0)] = 1
    elif duration_labels.sum() == 0:  # expect: GM101
        duration_labels[duration_labels.sum(dim=1).eq(0)] = 1
    return encoded_embeddings * duration_labels.unsqueeze(-1)


def make():
    """Return (eager_callable, input_sets) where input_sets together take EVERY branch."""
    torch.manual_seed(0)
    embeddings = torch.randn(2, 3, 4)
    return length_regulator, [
        (embeddings, torch.zeros(2, 3, dtype=torch.long)),
        (embeddings, torch.tensor([[1, 0, 2], [0, 0, 0]])),
    ]


compiled = torch.compile(length_regulator)

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
