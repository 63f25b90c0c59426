"""Memorizing Transformers KNNAttention: local causal attention plus retrieved memories from `knn_memory.search`, which moves queries to numpy (`.detach().cpu().numpy()`), searches an index and comes back through `torch.from_numpy`.

Source: lucidrains/memorizing-transformers-pytorch@272e39bafd2a507d21ac896bd7cf4b593ee9acb7:memorizing_transformers_pytorch/memorizing_transformers_pytorch.py:186-296
Also: memorizing_transformers_pytorch/knn_memory.py:52-255 (KNN, KNNMemory.add/search).
Kept: KNNAttention.forward verbatim (l2norm, xl memory, causal mask, memory sim with
`~mem_mask`, discarded memories added when `numel() > 0`, output gate); KNNMemory.add and
.search's numpy round trip, per-index loop, `np.where(mask, indices, 0)`, masked_fill.
Simplified: faiss IndexHNSWFlat replaced by a numpy inner-product top-k over stored keys;
the memmap database is an in-memory numpy array; joblib Parallel is a list comprehension;
einops pack/unpack/rearrange written as reshape; the layer wrapper passes knn_memory
positionally; dims 8, 2 heads of 4, 3 retrieved memories.
"""
import math

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn, einsum


def exists(val):
    return val is not None


def l2norm(t):
    return F.normalize(t, dim = -1)


class KNN():
    def __init__(self, dim, max_num_entries, cap_num_entries = False):
        self.dim = dim
        self.max_num_entries = max_num_entries
        self.cap_num_entries = cap_num_entries
        self.reset()

    def reset(self):
        self.ids = np.empty((0,), dtype = np.int32)
        self.keys = np.empty((0, self.dim), dtype = np.float32)
        self.is_trained = False

    def train(self, x):
        self.is_trained = True

    def add(self, x, ids):
        if not self.is_trained:
            self.train(x)

        self.ids = np.concatenate((ids, self.ids))

        if self.cap_num_entries and len(self.ids) > self.max_num_entries:
            self.reset()

        self.keys = np.concatenate((x, self.keys))

    def search(self, x, topk, nprobe = 8):
        if not self.is_trained or len(self.ids) < topk:
            return np.full((x.shape[0], topk), -1)

        scores = x @ self.keys.T
        order = np.argsort(-scores, axis = -1, kind = 'stable')[:, :topk]
        return self.ids[order]


class KNNMemory():
    def __init__(self, dim, max_memories = 16, num_indices = 1):
        self.dim = dim
        self.num_indices = num_indices
        self.scoped_indices = list(range(num_indices))

        self.max_memories = max_memories
        self.shape = (num_indices, max_memories, 2, dim)
        self.db_offsets = np.zeros(num_indices, dtype = np.int32)

        self.db = np.zeros(self.shape, dtype = np.float32)
        self.knns = [KNN(dim = dim, max_num_entries = max_memories, cap_num_entries = True) for _ in range(num_indices)]

    def add(self, memories):
        memories = memories.detach().cpu().numpy()
        memories = memories[:, -self.max_memories:]
        num_memories = memories.shape[1]

        knn_insert_ids = np.arange(num_memories)

        keys = np.ascontiguousarray(memories[..., 0, :])
        knns = [self.knns[i] for i in self.scoped_indices]
        db_offsets = [self.db_offsets[i] for i in self.scoped_indices]

        for knn, key, db_offset in zip(knns, keys, db_offsets):
            knn.add(key, ids = knn_insert_ids + db_offset)

        add_indices = (np.arange(num_memories)[None, :] + self.db_offsets[list(self.scoped_indices)][:, None]) % self.max_memories
        self.db[np.array(self.scoped_indices)[:, None], add_indices] = memories

        self.db_offsets += num_memories

    def search(self, queries, topk, nprobe = 8):
        b, *ps, d = queries.shape
        queries = queries.reshape(b, -1, d)

        device = queries.device
        queries = queries.detach().cpu().numpy()

        all_masks = []
        all_key_values = []

        knns = [self.knns[i] for i in self.scoped_indices]

        fetched_indices = [knn.search(query, topk, nprobe) for knn, query in zip(knns, queries)]

        for batch_index, indices in zip(self.scoped_indices, fetched_indices):
            mask = indices != -1
            db_indices = np.where(mask, indices, 0)

            all_masks.append(torch.from_numpy(mask))

            key_values = self.db[batch_index, db_indices % self.max_memories]
            all_key_values.append(torch.from_numpy(key_values))

        all_masks = torch.stack(all_masks)
        all_key_values = torch.stack(all_key_values)
        all_key_values = all_key_values.masked_fill(~all_masks[..., None, None], 0.)

        all_key_values = all_key_values.reshape(b, *ps, topk, 2, d)
        all_masks = all_masks.reshape(b, *ps, topk)

        return all_key_values.to(device), all_masks.to(device)


class KNNAttention(nn.Module):
    def __init__(
        self,
        *,
        dim,
        heads = 8,
        dim_head = 64,
        dropout = 0.,
        num_retrieved_memories = 32,
        xl_max_memories = 0.,
        attn_scale_init = 20,
        gate_output = False
    ):
        super().__init__()
        self.heads = heads
        self.scale = nn.Parameter(torch.ones(heads, 1, 1) * math.log(attn_scale_init))

        inner_dim = heads * dim_head
        self.xl_max_memories = xl_max_memories

        self.num_retrieved_memories = num_retrieved_memories

        self.dropout = nn.Dropout(dropout)
        self.knn_mem_dropout = nn.Dropout(dropout)

        self.to_q = nn.Linear(dim, inner_dim, bias = False)
        self.to_kv = nn.Linear(dim, dim_head * 2, bias = False)
        self.to_out = nn.Linear(inner_dim, dim, bias = False)

        self.output_gate = nn.Parameter(torch.zeros(1)) if gate_output else None

    def forward(
        self,
        x,
        *,
        knn_memory,
        xl_memory = None,
        add_knn_memory = True,
        rel_pos_bias = None
    ):
        b, n, h, device = *x.shape[:2], self.heads, x.device
        q, k, v = (self.to_q(x), *self.to_kv(x).chunk(2, dim = -1))

        q = q.reshape(b, n, h, -1).transpose(1, 2)

        q, k = map(l2norm, (q, k))

        if exists(xl_memory):
            k_xl_mem, v_xl_mem = xl_memory.unbind(dim = -2)
            k = torch.cat((k_xl_mem, k), dim = -2)
            v = torch.cat((v_xl_mem, v), dim = -2)

        scale = self.scale.exp()

        sim = einsum('b h i d, b j d -> b h i j', q, k) * scale
        i, j = sim.shape[-2:]

        if exists(rel_pos_bias):
            sim = rel_pos_bias[..., -i:, -j:] + sim

        mask_value = -torch.finfo(sim.dtype).max

        causal_mask = torch.ones((i, j), dtype = torch.bool, device = device).triu(j - i + 1)
        sim = sim.masked_fill(causal_mask, mask_value)

        mem_kv, mem_mask = knn_memory.search(q, self.num_retrieved_memories)
        mem_k, mem_v = mem_kv.unbind(dim = -2)

        sim_mem = einsum('b h i d, b h i j d -> b h i j', q, mem_k) * scale
        sim_mem = sim_mem.masked_fill(~mem_mask, mask_value)

        new_kv_memories = torch.stack((k, v), dim = -2).detach()

        if self.xl_max_memories > 0:
            new_kv_memories_discarded, new_xl_kv_memories = new_kv_memories[:, :-self.xl_max_memories], new_kv_memories[:, -self.xl_max_memories:]
        else:
            new_kv_memories_discarded, new_xl_kv_memories = new_kv_memories, None

        if add_knn_memory and new_kv_memories_discarded.numel() > 0:
            knn_memory.add(new_kv_memories_discarded)

        sim = torch.cat((sim_mem, sim), dim = -1)
        attn = sim.softmax(dim = -1)
        attn = self.dropout(attn)

        local_attn, mem_attn = attn[..., self.num_retrieved_memories:], attn[..., :self.num_retrieved_memories]
        local_out = einsum('b h i j, b j d -> b h i d', local_attn, v)
        mem_out = einsum('b h i j, b h i j d -> b h i d', mem_attn, mem_v)

        out = local_out + mem_out

        out = out.transpose(1, 2).reshape(b, n, -1)
        out = self.to_out(out)

        if exists(self.output_gate):
            out = out * self.output_gate.tanh()

        return out, new_xl_kv_memories


class MemoryLayer(nn.Module):
    def __init__(self, dim = 8):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.attn = KNNAttention(dim = dim, heads = 2, dim_head = 4, num_retrieved_memories = 3, xl_max_memories = 2, gate_output = True)

    def forward(self, x, knn_memory, xl_memory = None):
        out, xl_mem = self.attn(self.norm(x), knn_memory = knn_memory, xl_memory = xl_memory)
        return out + x, xl_mem


model = torch.compile(MemoryLayer())


def make():
    torch.manual_seed(0)
    layer = MemoryLayer()
    x = torch.randn(2, 5, 8)
    empty = KNNMemory(dim = 4, max_memories = 64, num_indices = 2)
    filled = KNNMemory(dim = 4, max_memories = 64, num_indices = 2)
    filled.add(torch.randn(2, 6, 2, 4))
    xl_memory = torch.randn(2, 2, 2, 4)
    return layer, [(x, empty), (x, filled, xl_memory)]

