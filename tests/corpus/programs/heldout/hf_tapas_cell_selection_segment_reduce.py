"""TAPAS cell selection head: segmented index maps (row x column product), scatter_reduce segment means/sums/maxima, column logits, single-column selection loss with Categorical/Bernoulli, `int(num_segments)` in range_index_map (no break).

Source: huggingface/transformers@v5.23.0:src/transformers/models/tapas/modeling_tapas.py:39-40,905-1020,1250-1560,1568-1735
Kept: IndexMap, ProductIndexMap (project_outer / project_inner), gather,
flatten (math.prod of the batch shape, offset per batch element),
range_index_map with its `int(num_segments)`, _segment_reduce over
`scatter_reduce(include_self=False)`, reduce_sum / reduce_mean / reduce_max,
compute_column_logits, _single_column_cell_selection_loss and
compute_token_logits (docstrings and comments dropped), and
TapasForQuestionAnswering.forward's part from the token-type columns to the
cell selection loss (row/column index maps clamped with `torch.min`, masks,
`average_logits_per_cell`, `select_one_column`).
Simplified: the BERT encoder is an embedding plus one linear; no aggregation
head; 3 rows x 3 columns, hidden 8.
"""
import math

import torch
from torch import nn

EPSILON_ZERO_DIVISION = 1e-10
CLOSE_ENOUGH_TO_LOG_ZERO = -10000.0


class IndexMap:

    def __init__(self, indices, num_segments, batch_dims=0):
        self.indices = torch.as_tensor(indices, device=indices.device)
        self.num_segments = num_segments
        self.batch_dims = batch_dims

    def batch_shape(self):
        return self.indices.size()[: self.batch_dims]  # returns a torch.Size object


class ProductIndexMap(IndexMap):

    def __init__(self, outer_index, inner_index):
        if outer_index.batch_dims != inner_index.batch_dims:
            raise ValueError("outer_index.batch_dims and inner_index.batch_dims must be the same.")

        super().__init__(
            indices=(inner_index.indices + outer_index.indices * inner_index.num_segments),
            num_segments=inner_index.num_segments * outer_index.num_segments,
            batch_dims=inner_index.batch_dims,
        )
        self.outer_index = outer_index
        self.inner_index = inner_index

    def project_outer(self, index):
        indices = torch.div(index.indices, self.inner_index.num_segments, rounding_mode="floor").type(torch.long)
        return IndexMap(indices=indices, num_segments=self.outer_index.num_segments, batch_dims=index.batch_dims)

    def project_inner(self, index):
        return IndexMap(
            indices=torch.fmod(index.indices, self.inner_index.num_segments)
            .type(torch.float)
            .floor()
            .type(torch.long),
            num_segments=self.inner_index.num_segments,
            batch_dims=index.batch_dims,
        )


def gather(values, index, name="segmented_gather"):
    indices = index.indices
    if len(values.shape[index.batch_dims :]) < 2:
        return torch.gather(
            values,
            index.batch_dims,
            indices.view(
                values.size()[0], -1
            ),  # torch.gather expects index to have the same number of dimensions as values
        ).view(indices.size())
    else:
        indices = indices.unsqueeze(-1).expand(values.shape)
        return torch.gather(values, index.batch_dims, indices)


def flatten(index, name="segmented_flatten"):
    batch_size = math.prod(index.batch_shape())
    offset = torch.arange(start=0, end=batch_size, device=index.indices.device) * index.num_segments
    offset = offset.view(index.batch_shape())
    for _ in range(index.batch_dims, len(index.indices.size())):  # typically range(1,2)
        offset = offset.unsqueeze(-1)

    indices = offset + index.indices
    return IndexMap(indices=indices.view(-1), num_segments=index.num_segments * batch_size, batch_dims=0)


def range_index_map(batch_shape, num_segments, device=None, name="range_index_map"):
    batch_shape = tuple(batch_shape)  # e.g. (2,) for a single batch dimension
    num_segments = int(num_segments)

    indices = torch.arange(start=0, end=num_segments, device=device)
    indices = indices.view([1] * len(batch_shape) + [num_segments])
    indices = indices.repeat(list(batch_shape) + [1])

    return IndexMap(indices=indices, num_segments=num_segments, batch_dims=len(batch_shape))


def _segment_reduce(values, index, segment_reduce_fn, name):
    flat_index = flatten(index)
    vector_shape = values.size()[len(index.indices.size()) :]  # torch.Size object
    flattened_shape = [-1] + list(vector_shape)
    flat_values = values.reshape(flattened_shape)

    out = torch.zeros(flat_index.num_segments, dtype=torch.float, device=flat_values.device)
    segment_means = out.scatter_reduce(
        dim=0, index=flat_index.indices.long(), src=flat_values.float(), reduce=segment_reduce_fn, include_self=False
    )

    new_shape = list(index.batch_shape()) + [index.num_segments] + list(vector_shape)

    output_values = segment_means.clone().view(new_shape).to(values.dtype)
    output_index = range_index_map(index.batch_shape(), index.num_segments, device=index.indices.device)
    return output_values, output_index


def reduce_sum(values, index, name="segmented_reduce_sum"):
    return _segment_reduce(values, index, "sum", name)


def reduce_mean(values, index, name="segmented_reduce_mean"):
    return _segment_reduce(values, index, "mean", name)


def reduce_max(values, index, name="segmented_reduce_max"):
    return _segment_reduce(values, index, "amax", name)


def compute_column_logits(
    sequence_output, column_output_weights, column_output_bias, cell_index, cell_mask, allow_empty_column_selection
):

    token_logits = torch.einsum("bsj,j->bs", sequence_output, column_output_weights) + column_output_bias

    cell_logits, cell_logits_index = reduce_mean(token_logits, cell_index)

    column_index = cell_index.project_inner(cell_logits_index)
    column_logits, out_index = reduce_sum(cell_logits * cell_mask, column_index)

    cell_count, _ = reduce_sum(cell_mask, column_index)
    column_logits /= cell_count + EPSILON_ZERO_DIVISION

    is_padding = torch.logical_and(cell_count < 0.5, ~torch.eq(out_index.indices, 0))
    column_logits += CLOSE_ENOUGH_TO_LOG_ZERO * torch.as_tensor(
        is_padding, dtype=torch.float32, device=is_padding.device
    )

    if not allow_empty_column_selection:
        column_logits += CLOSE_ENOUGH_TO_LOG_ZERO * torch.as_tensor(
            torch.eq(out_index.indices, 0), dtype=torch.float32, device=out_index.indices.device
        )

    return column_logits


def _single_column_cell_selection_loss(token_logits, column_logits, labels, cell_index, col_index, cell_mask):

    labels_per_column, _ = reduce_sum(torch.as_tensor(labels, dtype=torch.float32, device=labels.device), col_index)
    column_label = torch.argmax(labels_per_column, dim=-1)  # shape (batch_size,)
    no_cell_selected = torch.eq(
        torch.max(labels_per_column, dim=-1)[0], 0
    )  # no_cell_selected is of shape (batch_size,) and equals True
    column_label = torch.where(
        no_cell_selected.view(column_label.size()), torch.zeros_like(column_label), column_label
    )

    column_dist = torch.distributions.Categorical(
        logits=column_logits, validate_args=False
    )  # shape (batch_size, max_num_cols)
    column_loss_per_example = -column_dist.log_prob(column_label)


    logits_per_cell, _ = reduce_mean(token_logits, cell_index)
    labels_per_cell, labels_index = reduce_max(
        torch.as_tensor(labels, dtype=torch.long, device=labels.device), cell_index
    )

    column_id_for_cells = cell_index.project_inner(labels_index).indices
    column_mask = torch.as_tensor(
        torch.eq(column_id_for_cells, torch.unsqueeze(column_label, dim=-1)),
        dtype=torch.float32,
        device=cell_mask.device,
    )

    cell_dist = torch.distributions.Bernoulli(logits=logits_per_cell, validate_args=False)  # shape (batch_size, 64*32)
    cell_log_prob = cell_dist.log_prob(labels_per_cell.type(torch.float32))  # shape(batch_size, 64*32)

    cell_loss = -torch.sum(cell_log_prob * column_mask * cell_mask, dim=1)

    cell_loss /= torch.sum(column_mask * cell_mask, dim=1) + EPSILON_ZERO_DIVISION

    selection_loss_per_example = column_loss_per_example
    selection_loss_per_example += torch.where(
        no_cell_selected.view(selection_loss_per_example.size()),
        torch.zeros_like(selection_loss_per_example),
        cell_loss,
    )

    selected_column_id = torch.as_tensor(
        torch.argmax(column_logits, dim=-1), dtype=torch.long, device=column_logits.device
    )  # shape (batch_size,)

    selected_column_mask = torch.as_tensor(
        torch.eq(column_id_for_cells, torch.unsqueeze(selected_column_id, dim=-1)),
        dtype=torch.float32,
        device=selected_column_id.device,
    )

    selected_column_mask = torch.where(
        torch.eq(column_id_for_cells, 0).view(selected_column_mask.size()),
        torch.zeros_like(selected_column_mask),
        selected_column_mask,
    )
    new_logits_per_cell = logits_per_cell + CLOSE_ENOUGH_TO_LOG_ZERO * (1.0 - cell_mask * selected_column_mask)
    logits = gather(new_logits_per_cell, cell_index)

    return selection_loss_per_example, logits


def compute_token_logits(sequence_output, temperature, output_weights, output_bias):
    logits = (torch.einsum("bsj,j->bs", sequence_output, output_weights) + output_bias) / temperature

    return logits


class TapasConfig:
    vocab_size = 30
    hidden_size = 8
    type_vocab_sizes = [3, 4, 4, 2, 2, 2, 2]
    max_num_rows = 3
    max_num_columns = 3
    temperature = 1.0
    select_one_column = True
    allow_empty_column_selection = False
    average_logits_per_cell = True
    init_cell_selection_weights_to_zero = False


class TapasForQuestionAnswering(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.embeddings = nn.Embedding(config.vocab_size, config.hidden_size)
        self.encoder = nn.Linear(config.hidden_size, config.hidden_size)
        self.output_weights = nn.Parameter(torch.randn(config.hidden_size) * 0.1)
        self.column_output_weights = nn.Parameter(torch.randn(config.hidden_size) * 0.1)
        self.output_bias = nn.Parameter(torch.zeros([]))
        self.column_output_bias = nn.Parameter(torch.zeros([]))

    def forward(self, input_ids, attention_mask=None, token_type_ids=None, table_mask=None, labels=None):
        sequence_output = torch.tanh(self.encoder(self.embeddings(input_ids)))
        input_shape = input_ids.size()
        device = input_ids.device

        # Construct indices for the table.
        if token_type_ids is None:
            token_type_ids = torch.zeros(
                (*input_shape, len(self.config.type_vocab_sizes)), dtype=torch.long, device=device
            )

        token_types = [
            "segment_ids",
            "column_ids",
            "row_ids",
            "prev_labels",
            "column_ranks",
            "inv_column_ranks",
            "numeric_relations",
        ]

        row_ids = token_type_ids[:, :, token_types.index("row_ids")]
        column_ids = token_type_ids[:, :, token_types.index("column_ids")]

        row_index = IndexMap(
            indices=torch.min(row_ids, torch.as_tensor(self.config.max_num_rows - 1, device=row_ids.device)),
            num_segments=self.config.max_num_rows,
            batch_dims=1,
        )
        col_index = IndexMap(
            indices=torch.min(column_ids, torch.as_tensor(self.config.max_num_columns - 1, device=column_ids.device)),
            num_segments=self.config.max_num_columns,
            batch_dims=1,
        )
        cell_index = ProductIndexMap(row_index, col_index)

        if attention_mask is None:
            attention_mask = torch.ones(input_shape, device=device)
        # Table cells only, without question tokens and table headers.
        if table_mask is None:
            table_mask = torch.where(row_ids > 0, torch.ones_like(row_ids), torch.zeros_like(row_ids))
        input_mask_float = attention_mask.to(device=device, dtype=torch.float)
        table_mask_float = table_mask.to(device=device, dtype=torch.float)
        # Mask for cells that exist in the table (i.e. that are not padding).
        cell_mask, _ = reduce_mean(input_mask_float, cell_index)

        # Compute logits per token. These are used to select individual cells.
        logits = compute_token_logits(sequence_output, self.config.temperature, self.output_weights, self.output_bias)

        # Compute logits per column. These are used to select a column.
        column_logits = None
        if self.config.select_one_column:
            column_logits = compute_column_logits(
                sequence_output,
                self.column_output_weights,
                self.column_output_bias,
                cell_index,
                cell_mask,
                self.config.allow_empty_column_selection,
            )

        total_loss = 0.0
        if labels is not None:
            # Cell selection log-likelihood
            if self.config.average_logits_per_cell:
                logits_per_cell, _ = reduce_mean(logits, cell_index)
                logits = gather(logits_per_cell, cell_index)

            selection_loss_per_example, logits = _single_column_cell_selection_loss(
                logits, column_logits, labels, cell_index, col_index, cell_mask
            )
            total_loss += torch.mean(selection_loss_per_example)

        return total_loss, logits * table_mask_float, column_logits


model = torch.compile(TapasForQuestionAnswering(TapasConfig()).eval())


def make():
    torch.manual_seed(0)
    input_ids = torch.randint(0, 30, (2, 10))
    token_type_ids = torch.zeros(2, 10, 7, dtype=torch.long)
    # question tokens first, then a 3x2 table laid out row by row
    token_type_ids[:, 4:, 1] = torch.tensor([1, 2, 1, 2, 1, 2])
    token_type_ids[:, 4:, 2] = torch.tensor([1, 1, 2, 2, 3, 3])
    labels = torch.zeros(2, 10, dtype=torch.long)
    labels[0, [5, 7]] = 1  # second column, rows 1-2
    return TapasForQuestionAnswering(TapasConfig()).eval(), [
        (input_ids, None, token_type_ids, None, labels),
        (input_ids, torch.ones(2, 10), token_type_ids),
    ]
