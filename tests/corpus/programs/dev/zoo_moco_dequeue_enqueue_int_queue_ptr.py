"""MoCo v1/v2 forward: the momentum key encoder and the queue update `ptr = int(self.queue_ptr)` with an `assert self.K % batch_size == 0` before the slice assignment into the queue buffer.

Source: facebookresearch/moco@4397a04ed63a95c4a157f017a71883944003b615:moco/builder.py:11-187
Kept: the constructor (encoder copy, mlp head hack, frozen key encoder, normalised
queue buffer, queue_ptr buffer), _momentum_update_key_encoder,
_dequeue_and_enqueue verbatim, the batch shuffle / unshuffle pair around the key
encoder, forward's einsum logits, temperature and labels.
Simplified: single process: concat_all_gather returns its input and the DDP batch
shuffle becomes the single-GPU shuffle (randperm + argsort, as in the repo's
colab demo); no .cuda(); the base encoder is a tiny MLP with an `fc` head;
dim 8, K 16.
"""
import torch
import torch.nn as nn


class TinyEncoder(nn.Module):
    def __init__(self, num_classes=8):
        super().__init__()
        self.body = nn.Sequential(nn.Flatten(), nn.Linear(12, 16), nn.ReLU())
        self.fc = nn.Linear(16, num_classes)

    def forward(self, x):
        return self.fc(self.body(x))


class MoCo(nn.Module):
    """
    Build a MoCo model with: a query encoder, a key encoder, and a queue
    https://arxiv.org/abs/1911.05722
    """

    def __init__(
        self,
        base_encoder,
        dim: int = 128,
        K: int = 65536,
        m: float = 0.999,
        T: float = 0.07,
        mlp: bool = False,
    ) -> None:
        super(MoCo, self).__init__()

        self.K = K
        self.m = m
        self.T = T

        # create the encoders
        # num_classes is the output fc dimension
        self.encoder_q = base_encoder(num_classes=dim)
        self.encoder_k = base_encoder(num_classes=dim)

        if mlp:  # hack: brute-force replacement
            dim_mlp = self.encoder_q.fc.weight.shape[1]
            self.encoder_q.fc = nn.Sequential(
                nn.Linear(dim_mlp, dim_mlp), nn.ReLU(), self.encoder_q.fc
            )
            self.encoder_k.fc = nn.Sequential(
                nn.Linear(dim_mlp, dim_mlp), nn.ReLU(), self.encoder_k.fc
            )

        for param_q, param_k in zip(
            self.encoder_q.parameters(), self.encoder_k.parameters()
        ):
            param_k.data.copy_(param_q.data)  # initialize
            param_k.requires_grad = False  # not update by gradient

        # create the queue
        self.register_buffer("queue", torch.randn(dim, K))
        self.queue = nn.functional.normalize(self.queue, dim=0)

        self.register_buffer("queue_ptr", torch.zeros(1, dtype=torch.long))

    @torch.no_grad()
    def _momentum_update_key_encoder(self) -> None:
        """
        Momentum update of the key encoder
        """
        for param_q, param_k in zip(
            self.encoder_q.parameters(), self.encoder_k.parameters()
        ):
            param_k.mul_(self.m).add_(param_q.mul(1. - self.m))

    @torch.no_grad()
    def _dequeue_and_enqueue(self, keys) -> None:
        # gather keys before updating queue
        keys = concat_all_gather(keys)

        batch_size = keys.shape[0]

        ptr = int(self.queue_ptr)
        assert self.K % batch_size == 0  # for simplicity

        # replace the keys at ptr (dequeue and enqueue)
        self.queue[:, ptr : ptr + batch_size] = keys.T
        ptr = (ptr + batch_size) % self.K  # move pointer

        self.queue_ptr[0] = ptr

    @torch.no_grad()
    def _batch_shuffle_single_gpu(self, x):
        """
        Batch shuffle, for making use of BatchNorm.
        """
        # random shuffle index
        idx_shuffle = torch.randperm(x.shape[0])

        # index for restoring
        idx_unshuffle = torch.argsort(idx_shuffle)

        return x[idx_shuffle], idx_unshuffle

    @torch.no_grad()
    def _batch_unshuffle_single_gpu(self, x, idx_unshuffle):
        """
        Undo batch shuffle.
        """
        return x[idx_unshuffle]

    def forward(self, im_q, im_k):
        """
        Input:
            im_q: a batch of query images
            im_k: a batch of key images
        Output:
            logits, targets
        """

        # compute query features
        q = self.encoder_q(im_q)  # queries: NxC
        q = nn.functional.normalize(q, dim=1)

        # compute key features
        with torch.no_grad():  # no gradient to keys
            self._momentum_update_key_encoder()  # update the key encoder

            # shuffle for making use of BN
            im_k, idx_unshuffle = self._batch_shuffle_single_gpu(im_k)

            k = self.encoder_k(im_k)  # keys: NxC
            k = nn.functional.normalize(k, dim=1)

            # undo shuffle
            k = self._batch_unshuffle_single_gpu(k, idx_unshuffle)

        # compute logits
        # Einstein sum is more intuitive
        # positive logits: Nx1
        l_pos = torch.einsum("nc,nc->n", [q, k]).unsqueeze(-1)
        # negative logits: NxK
        l_neg = torch.einsum("nc,ck->nk", [q, self.queue.clone().detach()])

        # logits: Nx(1+K)
        logits = torch.cat([l_pos, l_neg], dim=1)

        # apply temperature
        logits /= self.T

        # labels: positive key indicators
        labels = torch.zeros(logits.shape[0], dtype=torch.long)

        # dequeue and enqueue
        self._dequeue_and_enqueue(k)

        return logits, labels


# utils
@torch.no_grad()
def concat_all_gather(tensor):
    """
    Single-process stand-in for torch.distributed.all_gather.
    """
    tensors_gather = [tensor]
    output = torch.cat(tensors_gather, dim=0)
    return output


def main_worker(args):
    model = MoCo(TinyEncoder, args.moco_dim, args.moco_k, args.moco_m, args.moco_t, args.mlp)
    model = torch.compile(model)
    return model


def make():
    torch.manual_seed(0)
    model = MoCo(TinyEncoder, dim=8, K=16, m=0.999, T=0.07, mlp=True)
    im_q = torch.randn(4, 3, 4)
    im_k = torch.randn(4, 3, 4)
    return model, [(im_q, im_k), (im_k, im_q)]
