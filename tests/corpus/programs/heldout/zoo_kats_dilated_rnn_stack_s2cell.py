"""Kats global model DilatedRNNStack with S2Cell: one time step per call, with h/c states kept in Python lists on the module and looked up by dilation.

Source: facebookresearch/Kats@0f96fb8b4c1ea7e668f46a37eeef4bb95c88ed21:kats/models/globalmodel/utils.py:331-590
Kept: the module-level NoneT default tensors, S2Cell's has_prev_state /
has_delayed_state branches, DilatedRNNStack's constructor (np.max over
nn_structure, _validate, add_module per cell, the optional adaptor),
_forward_S2Cell's keyword plumbing and forward's per-call state
bookkeeping (`t = len(self.h_state_store)`, appends, resNet-style block
sums).
Simplified: the LSTM2Cell and jit branches are kept in the constructor only
as far as S2Cell needs; nn_structure [[1, 2]], input 3, state 6, h 2.
"""
import logging
from typing import List, Optional, Tuple

import numpy as np
import torch
from torch import Tensor

# for jit
NoneT = torch.FloatTensor([-1e38])


class S2Cell(torch.nn.Module):
    def __init__(self, input_size: int, h_size: int, state_size: int):
        super(S2Cell, self).__init__()
        self.lxh = torch.nn.Linear(input_size + 2 * h_size, 4 * state_size)
        self.h_size = h_size
        self.state_size = state_size
        self.out_size = state_size - h_size

    # jit does not like Optional, so we have to use bool variables and NoneT
    def forward(
        self,
        input_t: Tensor,
        has_prev_state: bool,
        has_delayed_state: bool,
        prev_h_state: Tensor = NoneT,
        delayed_h_state: Tensor = NoneT,
        prev_c_state: Tensor = NoneT,
        delayed_c_state: Tensor = NoneT,
    ) -> Tuple[Tensor, Tuple[Tensor, Tensor]]:
        if has_delayed_state:
            xh = torch.cat([input_t, prev_h_state, delayed_h_state], dim=1)
        elif has_prev_state:
            xh = torch.cat([input_t, prev_h_state, prev_h_state], dim=1)
        else:
            empty_h_state = torch.zeros(
                input_t.shape[0], 2 * self.h_size, dtype=torch.float
            )
            xh = torch.cat([input_t, empty_h_state], dim=1)

        gates = self.lxh(xh)
        chunked_gates = torch.chunk(gates, 4, dim=1)

        forget_gate = (chunked_gates[0] + 1).sigmoid()
        new_stat = chunked_gates[1].tanh()
        out_gate = chunked_gates[3].sigmoid()

        if has_prev_state:
            if has_delayed_state:
                alpha = chunked_gates[2].sigmoid()
                weighted_c_state = alpha * prev_c_state + (1 - alpha) * delayed_c_state
            else:
                weighted_c_state = prev_c_state

            new_stat = forget_gate * weighted_c_state + (1 - forget_gate) * new_stat

        whole_output = out_gate * new_stat

        output_t, h_state = torch.split(
            whole_output, [self.out_size, self.h_size], dim=1
        )
        return output_t, (h_state, new_stat)


class DilatedRNNStack(torch.nn.Module):
    def __init__(
        self,
        nn_structure: List[List[int]],
        cell_name: str,
        input_size: int,
        state_size: int,
        output_size: Optional[int] = None,
        h_size=None,
        jit=False,
    ) -> None:
        super(DilatedRNNStack, self).__init__()
        block_num = len(nn_structure)
        self.nn_structure = nn_structure
        self.cell_name = cell_name
        self.input_size = input_size
        self.h_size = h_size
        self.jit = jit
        self.h_state_store = []
        self.c_state_store = []
        self.max_dilation = np.max([np.max(t) for t in nn_structure])

        self.reset_state()

        out_size = self._validate(cell_name, state_size, h_size)

        self.cells = []
        layer = 0
        iblock = 0
        for iblock in range(block_num):
            for lay in range(len(nn_structure[iblock])):
                if lay == 0 and iblock == 0:
                    tmp_input_size = input_size
                else:
                    tmp_input_size = out_size

                if cell_name == "S2Cell":
                    if jit:
                        cell = torch.jit.script(S2Cell(tmp_input_size, h_size, state_size))
                    else:
                        cell = S2Cell(tmp_input_size, h_size, state_size)
                else:
                    cell = torch.nn.LSTMCell(tmp_input_size, state_size)
                self.add_module("Cell_{}".format(layer), cell)
                self.cells.append(cell)
                layer += 1
        if isinstance(output_size, int) and output_size > 0:
            self.adaptor = torch.nn.Linear(out_size, output_size)
        elif output_size is None:
            self.adaptor = None
        else:
            msg = f"output_size should be either None (for encoder) or a positive integer, but receives {output_size}."
            logging.error(msg)
            raise ValueError(msg)

        self.block_num = block_num
        self.out_size = out_size

    def _validate(self, cell_name: str, state_size: int, h_size: Optional[int]) -> int:
        if cell_name not in ["LSTM2Cell", "S2Cell", "LSTM"]:
            msg = f"Only support cells 'S2Cell', 'LSTM2Cell', 'LSTM' but receive {cell_name}."
            logging.error(msg)
            raise ValueError(msg)

        if cell_name == "LSTM2Cell" or cell_name == "S2Cell":
            if h_size is None:
                msg = "h_size should be a positive integer smaller than state_size for LSTM2Cell or S2Cell."
                logging.error(msg)
                raise ValueError(msg)
            if h_size >= state_size:
                msg = "h_size should be smaller than state_size."
                logging.error(msg)
                raise ValueError(msg)
            out_size = state_size - h_size
        else:
            out_size = state_size

        return out_size

    def _forward_S2Cell(
        self,
        tmp_input: Tensor,
        layer: int,
        has_prev_state: bool,
        has_delayed_state: bool,
        t: int,
        ti_1: int,
    ) -> Tuple[Tensor, Tuple[Tensor, Tensor]]:
        """forward function for S2Cell (to avoid lint warning)."""

        if has_delayed_state:
            output_t, (h_state, new_state) = self.cells[layer](
                tmp_input,
                has_prev_state,
                has_delayed_state,
                prev_h_state=self.h_state_store[t - 1][layer],
                delayed_h_state=self.h_state_store[ti_1][layer],
                prev_c_state=self.c_state_store[t - 1][layer],
                delayed_c_state=self.c_state_store[ti_1][layer],
            )
        elif has_prev_state:
            output_t, (h_state, new_state) = self.cells[layer](
                tmp_input,
                has_prev_state,
                has_delayed_state,
                prev_h_state=self.h_state_store[t - 1][layer],
                prev_c_state=self.c_state_store[t - 1][layer],
            )
        else:
            output_t, (h_state, new_state) = self.cells[layer](tmp_input, False, False)
        return output_t, (h_state, new_state)

    def forward(self, input_t: Tensor) -> Tensor:
        prev_block_output = torch.zeros(
            input_t.shape[0], self.out_size, dtype=torch.float
        )
        t = len(self.h_state_store)
        self.h_state_store.append([])
        self.c_state_store.append([])
        output_t = NoneT  # just to initialize output_t
        has_prev_state = t > 0

        layer = 0
        for iblock in range(self.block_num):
            for lay in range(len(self.nn_structure[iblock])):
                if lay == 0:
                    if iblock == 0:
                        tmp_input = input_t
                    else:
                        tmp_input = prev_block_output
                else:
                    tmp_input = output_t

                ti_1 = t - self.nn_structure[iblock][lay]
                has_delayed_state = ti_1 >= 0

                output_t, (h_state, new_state) = self._forward_S2Cell(
                    tmp_input, layer, has_prev_state, has_delayed_state, t, ti_1
                )

                self.h_state_store[t].append(h_state)
                self.c_state_store[t].append(new_state)
                layer += 1
            prev_block_output = output_t + prev_block_output

        if self.adaptor is not None:
            output_t = self.adaptor(prev_block_output)
        else:
            output_t = prev_block_output
        return output_t

    def reset_state(self) -> None:
        """Clear all stored state tensors."""
        self.h_state_store = []
        self.c_state_store = []


def build_encoder() -> DilatedRNNStack:
    return DilatedRNNStack(
        nn_structure=[[1, 2]],
        cell_name="S2Cell",
        input_size=3,
        state_size=6,
        output_size=2,
        h_size=2,
    )


encoder = build_encoder()
encoder.compile()


def make():
    torch.manual_seed(0)
    steps = torch.randn(4, 2, 3)
    return build_encoder(), [(steps[0],), (steps[1],), (steps[2],), (steps[3],)]
