"""AllenNLP's BasicClassifier over an LSTM Seq2VecEncoder: `_EncoderBase.sort_and_run_forward` counts valid rows with `.int().item()`, packs with `sorted_sequence_lengths[:num_valid].data.tolist()`, then runs the nn.LSTM.

Source: allenai/allennlp@80fb6061e568cb9d6ab5d45b661e86eb61b92c82:allennlp/modules/encoder_base.py:40-140
Also: allennlp/modules/seq2vec_encoders/pytorch_seq2vec_wrapper.py (PytorchSeq2VecWrapper,
LstmSeq2VecEncoder), allennlp/nn/util.py (get_text_field_mask,
get_lengths_from_binary_sequence_mask, sort_batch_by_length), allennlp/models/basic_classifier.py
(BasicClassifier.forward).
Kept: sort_and_run_forward verbatim (the stateful/hidden_state plumbing), the
wrapper's forward with its `num_valid < batch_size` re-padding and the
try/except on `self._module.bidirectional`, get_text_field_mask's dict walk,
BasicClassifier.forward's output_dict and optional loss.
Simplified: the TextFieldEmbedder is a single nn.Embedding, no seq2seq encoder,
feedforward or accuracy metric; ConfigurationError is a local subclass of
Exception; vocab 10, embedding 4, hidden 3.
"""
from typing import Any, Callable, Dict, Optional, Tuple, Union

import torch
from torch.nn.utils.rnn import PackedSequence, pack_padded_sequence

RnnState = Union[torch.Tensor, Tuple[torch.Tensor, torch.Tensor]]
TextFieldTensors = Dict[str, Dict[str, torch.Tensor]]


class ConfigurationError(Exception):
    pass


def get_text_field_mask(
    text_field_tensors: TextFieldTensors,
    num_wrapping_dims: int = 0,
    padding_id: int = 0,
) -> torch.BoolTensor:
    masks = []
    for indexer_name, indexer_tensors in text_field_tensors.items():
        if "mask" in indexer_tensors:
            masks.append(indexer_tensors["mask"].bool())
    if len(masks) == 1:
        return masks[0]
    elif len(masks) > 1:
        raise ValueError("found two mask outputs; not sure which to use!")

    tensor_dims = [
        (tensor.dim(), tensor)
        for indexer_output in text_field_tensors.values()
        for tensor in indexer_output.values()
    ]
    tensor_dims.sort(key=lambda x: x[0])

    smallest_dim = tensor_dims[0][0] - num_wrapping_dims
    if smallest_dim == 2:
        token_tensor = tensor_dims[0][1]
        return token_tensor != padding_id
    elif smallest_dim == 3:
        character_tensor = tensor_dims[0][1]
        return (character_tensor != padding_id).any(dim=-1)
    else:
        raise ValueError("Expected a tensor with dimension 2 or 3, found {}".format(smallest_dim))


def get_lengths_from_binary_sequence_mask(mask: torch.BoolTensor) -> torch.LongTensor:
    return mask.sum(-1)


def sort_batch_by_length(tensor: torch.Tensor, sequence_lengths: torch.Tensor):
    if not isinstance(tensor, torch.Tensor) or not isinstance(sequence_lengths, torch.Tensor):
        raise ConfigurationError("Both the tensor and sequence lengths must be torch.Tensors.")

    sorted_sequence_lengths, permutation_index = sequence_lengths.sort(0, descending=True)
    sorted_tensor = tensor.index_select(0, permutation_index)

    index_range = torch.arange(0, len(sequence_lengths), device=sequence_lengths.device)
    # This is the equivalent of zipping with index, sorting by the original
    # sequence lengths and returning the now sorted indices.
    _, reverse_mapping = permutation_index.sort(0, descending=False)
    restoration_indices = index_range.index_select(0, reverse_mapping)
    return sorted_tensor, sorted_sequence_lengths, restoration_indices, permutation_index


class _EncoderBase(torch.nn.Module):
    def __init__(self, stateful: bool = False) -> None:
        super().__init__()
        self.stateful = stateful
        self._states = None

    def sort_and_run_forward(
        self,
        module: Callable[
            [PackedSequence, Optional[RnnState]],
            Tuple[Union[PackedSequence, torch.Tensor], RnnState],
        ],
        inputs: torch.Tensor,
        mask: torch.BoolTensor,
        hidden_state: Optional[RnnState] = None,
    ):
        # In some circumstances you may have sequences of zero length. `pack_padded_sequence`
        # requires all sequence lengths to be > 0, so remove sequences of zero length before
        # calling self._module, then fill with zeros.

        # First count how many sequences are empty.
        batch_size = mask.size(0)
        num_valid = torch.sum(mask[:, 0]).int().item()

        sequence_lengths = get_lengths_from_binary_sequence_mask(mask)
        (
            sorted_inputs,
            sorted_sequence_lengths,
            restoration_indices,
            sorting_indices,
        ) = sort_batch_by_length(inputs, sequence_lengths)

        # Now create a PackedSequence with only the non-empty, sorted sequences.
        packed_sequence_input = pack_padded_sequence(
            sorted_inputs[:num_valid, :, :],
            sorted_sequence_lengths[:num_valid].data.tolist(),
            batch_first=True,
        )
        # Prepare the initial states.
        if not self.stateful:
            if hidden_state is None:
                initial_states: Any = hidden_state
            elif isinstance(hidden_state, tuple):
                initial_states = [
                    state.index_select(1, sorting_indices)[:, :num_valid, :].contiguous()
                    for state in hidden_state
                ]
            else:
                initial_states = hidden_state.index_select(1, sorting_indices)[
                    :, :num_valid, :
                ].contiguous()

        else:
            initial_states = self._get_initial_states(batch_size, num_valid, sorting_indices)

        # Actually call the module on the sorted PackedSequence.
        module_output, final_states = module(packed_sequence_input, initial_states)

        return module_output, final_states, restoration_indices

    def _get_initial_states(self, batch_size, num_valid, sorting_indices):
        raise NotImplementedError("stateful encoders are not part of this program")


class PytorchSeq2VecWrapper(_EncoderBase):
    def __init__(self, module: torch.nn.modules.RNNBase) -> None:
        # Seq2VecEncoders cannot be stateful.
        super().__init__(stateful=False)
        self._module = module
        try:
            if not self._module.batch_first:
                raise ConfigurationError("Our encoder semantics assumes batch is always first!")
        except AttributeError:
            pass

    def get_input_dim(self) -> int:
        return self._module.input_size

    def get_output_dim(self) -> int:
        try:
            is_bidirectional = self._module.bidirectional
        except AttributeError:
            is_bidirectional = False
        return self._module.hidden_size * (2 if is_bidirectional else 1)

    def forward(
        self, inputs: torch.Tensor, mask: torch.BoolTensor, hidden_state: torch.Tensor = None
    ) -> torch.Tensor:

        if mask is None:
            return self._module(inputs, hidden_state)[0][:, -1, :]

        batch_size = mask.size(0)

        (
            _,
            state,
            restoration_indices,
        ) = self.sort_and_run_forward(self._module, inputs, mask, hidden_state)

        # Deal with the fact the LSTM state is a tuple of (state, memory).
        if isinstance(state, tuple):
            state = state[0]

        num_layers_times_directions, num_valid, encoding_dim = state.size()
        # Add back invalid rows.
        if num_valid < batch_size:
            zeros = state.new_zeros(
                num_layers_times_directions, batch_size - num_valid, encoding_dim
            )
            state = torch.cat([state, zeros], 1)

        unsorted_state = state.transpose(0, 1).index_select(0, restoration_indices)

        try:
            last_state_index = 2 if self._module.bidirectional else 1
        except AttributeError:
            last_state_index = 1
        last_layer_state = unsorted_state[:, -last_state_index:, :]
        return last_layer_state.contiguous().view([-1, self.get_output_dim()])


class LstmSeq2VecEncoder(PytorchSeq2VecWrapper):
    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        num_layers: int = 1,
        bias: bool = True,
        dropout: float = 0.0,
        bidirectional: bool = False,
    ):
        module = torch.nn.LSTM(
            input_size=input_size,
            hidden_size=hidden_size,
            num_layers=num_layers,
            bias=bias,
            batch_first=True,
            dropout=dropout,
            bidirectional=bidirectional,
        )
        super().__init__(module=module)


class BasicClassifier(torch.nn.Module):
    def __init__(self, vocab_size: int, embedding_dim: int, seq2vec_encoder: PytorchSeq2VecWrapper,
                 num_labels: int, dropout: float = None) -> None:
        super().__init__()
        self._text_field_embedder = torch.nn.Embedding(vocab_size, embedding_dim, padding_idx=0)
        self._seq2seq_encoder = None
        self._seq2vec_encoder = seq2vec_encoder
        self._classifier_input_dim = self._seq2vec_encoder.get_output_dim()
        if dropout:
            self._dropout = torch.nn.Dropout(dropout)
        else:
            self._dropout = None
        self._feedforward = None
        self._classification_layer = torch.nn.Linear(self._classifier_input_dim, num_labels)
        self._loss = torch.nn.CrossEntropyLoss()

    def forward(self, tokens: TextFieldTensors, label: torch.IntTensor = None) -> Dict[str, torch.Tensor]:
        embedded_text = self._text_field_embedder(tokens["tokens"]["tokens"])
        mask = get_text_field_mask(tokens)

        if self._seq2seq_encoder:
            embedded_text = self._seq2seq_encoder(embedded_text, mask=mask)

        embedded_text = self._seq2vec_encoder(embedded_text, mask=mask)

        if self._dropout:
            embedded_text = self._dropout(embedded_text)

        if self._feedforward is not None:
            embedded_text = self._feedforward(embedded_text)

        logits = self._classification_layer(embedded_text)
        probs = torch.nn.functional.softmax(logits, dim=-1)

        output_dict = {"logits": logits, "probs": probs}
        if label is not None:
            loss = self._loss(logits, label.long().view(-1))
            output_dict["loss"] = loss

        return output_dict


def build_model(bidirectional: bool = False) -> BasicClassifier:
    encoder = LstmSeq2VecEncoder(input_size=4, hidden_size=3, bidirectional=bidirectional)
    return BasicClassifier(10, 4, encoder, num_labels=2)


model = torch.compile(build_model(bidirectional=True))


def make():
    torch.manual_seed(0)
    full = torch.tensor([[3, 4, 5, 0], [6, 7, 0, 0], [1, 2, 8, 9]])
    with_empty = torch.tensor([[3, 4, 5, 0], [0, 0, 0, 0], [1, 2, 0, 0]])
    labels = torch.tensor([0, 1, 1])
    return build_model(bidirectional=True), [
        ({"tokens": {"tokens": full}}, labels),
        ({"tokens": {"tokens": with_empty}},),
    ]
