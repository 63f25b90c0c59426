"""SpeechBrain's InputNormalization: each sentence is sliced to `torch.round(lengths[snt_id] * x.shape[1]).int()` frames, speaker mode keys dicts by `int(spk_ids[snt_id][0])`, and global mode updates `self.count`/`self.glob_mean` in training.

Source: speechbrain/speechbrain@79c4fd16978bec74329c04bf682b10bbe5672d59:speechbrain/processing/features.py:997-1231 (ddp_all_reduce from speechbrain/utils/distributed.py:231-256)
Kept: the constructor's statistics attributes, forward with the per-sentence
loop, sentence/speaker/batch/global branches and their moving averages,
ddp_all_reduce on the batch statistics, _compute_current_stats; an encoder
that normalises features the way EncoderClassifier.encode_batch does
(mean_var_norm(feats, wav_lens) then the embedding model).
Simplified: no checkpoint hooks or save/load; the embedding model is a
linear layer with mean pooling; 3 sentences of up to 6 frames, 4 features.
"""
import torch


def ddp_all_reduce(communication_object, reduce_op):
    """In DDP mode, this function will perform an all_reduce on the object."""
    # If DDP not initialised or executed with a main process barrier
    if not torch.distributed.is_available() or not torch.distributed.is_initialized():
        return communication_object

    torch.distributed.all_reduce(communication_object, op=reduce_op)
    return communication_object


class InputNormalization(torch.nn.Module):
    """Performs mean and variance normalization of the input tensor."""

    def __init__(
        self,
        mean_norm=True,
        std_norm=True,
        norm_type="global",
        avg_factor=None,
        requires_grad=False,
        update_until_epoch=3,
    ):
        super().__init__()
        self.mean_norm = mean_norm
        self.std_norm = std_norm
        self.norm_type = norm_type
        self.avg_factor = avg_factor
        self.requires_grad = requires_grad
        self.glob_mean = torch.tensor([0])
        self.glob_std = torch.tensor([0])
        self.spk_dict_mean = {}
        self.spk_dict_std = {}
        self.spk_dict_count = {}
        self.weight = 1.0
        self.count = 0
        self.eps = 1e-10
        self.update_until_epoch = update_until_epoch

    def forward(self, x, lengths, spk_ids=torch.tensor([]), epoch=0):
        """Returns the normalized tensor."""
        N_batches = x.shape[0]

        current_means = []
        current_stds = []

        if self.norm_type == "sentence" or self.norm_type == "speaker":
            # we will do in-place slice assignments over `out`
            out = torch.empty_like(x)
        # otherwise don't assign it yet

        for snt_id in range(N_batches):
            # Avoiding padded time steps
            actual_size = torch.round(lengths[snt_id] * x.shape[1]).int()

            # computing statistics
            current_mean, current_std = self._compute_current_stats(
                x[snt_id, 0:actual_size, ...]
            )

            current_means.append(current_mean)
            current_stds.append(current_std)

            if self.norm_type == "sentence":
                out[snt_id] = (x[snt_id] - current_mean.data) / current_std.data

            if self.norm_type == "speaker":
                spk_id = int(spk_ids[snt_id][0])

                if self.training:
                    if spk_id not in self.spk_dict_mean:
                        # Initialization of the dictionary
                        self.spk_dict_mean[spk_id] = current_mean
                        self.spk_dict_std[spk_id] = current_std
                        self.spk_dict_count[spk_id] = 1

                    else:
                        self.spk_dict_count[spk_id] = (
                            self.spk_dict_count[spk_id] + 1
                        )

                        if self.avg_factor is None:
                            self.weight = 1 / self.spk_dict_count[spk_id]
                        else:
                            self.weight = self.avg_factor

                        self.spk_dict_mean[spk_id] = (
                            1 - self.weight
                        ) * self.spk_dict_mean[spk_id].to(
                            current_mean
                        ) + self.weight * current_mean
                        self.spk_dict_std[spk_id] = (
                            1 - self.weight
                        ) * self.spk_dict_std[spk_id].to(
                            current_std
                        ) + self.weight * current_std

                        self.spk_dict_mean[spk_id].detach()
                        self.spk_dict_std[spk_id].detach()

                    speaker_mean = self.spk_dict_mean[spk_id].data
                    speaker_std = self.spk_dict_std[spk_id].data
                else:
                    if spk_id in self.spk_dict_mean:
                        speaker_mean = self.spk_dict_mean[spk_id].data
                        speaker_std = self.spk_dict_std[spk_id].data
                    else:
                        speaker_mean = current_mean.data
                        speaker_std = current_std.data

                out[snt_id] = (x[snt_id] - speaker_mean) / speaker_std

        if self.norm_type == "batch" or self.norm_type == "global":
            current_mean = torch.mean(torch.stack(current_means), dim=0)
            current_std = torch.mean(torch.stack(current_stds), dim=0)

            # For multi GPU, we need to sync the statistics across processes.
            current_mean = ddp_all_reduce(
                current_mean, torch.distributed.ReduceOp.AVG
            )
            current_std = ddp_all_reduce(
                current_std, torch.distributed.ReduceOp.AVG
            )

            if self.norm_type == "batch":
                out = (x - current_mean.data) / (current_std.data)

            if self.norm_type == "global":
                if self.training:
                    if self.count == 0:
                        self.glob_mean = current_mean
                        self.glob_std = current_std

                    elif epoch is None or epoch < self.update_until_epoch:
                        if self.avg_factor is None:
                            self.weight = 1 / (self.count + 1)
                        else:
                            self.weight = self.avg_factor

                        self.glob_mean = (1 - self.weight) * self.glob_mean.to(
                            current_mean
                        ) + self.weight * current_mean

                        self.glob_std = (1 - self.weight) * self.glob_std.to(
                            current_std
                        ) + self.weight * current_std

                    self.glob_mean.detach()
                    self.glob_std.detach()

                    self.count = self.count + 1

                out = (x - self.glob_mean.data.to(x)) / (
                    self.glob_std.data.to(x)
                )

        return out

    def _compute_current_stats(self, x):
        """Computes mean and std along dimension 0."""
        # Compute current mean
        if self.mean_norm:
            current_mean = torch.mean(x, dim=0).detach().data
        else:
            current_mean = torch.tensor([0.0], device=x.device)

        # Compute current std
        if self.std_norm:
            current_std = torch.std(x, dim=0).detach().data
        else:
            current_std = torch.tensor([1.0], device=x.device)

        # Improving numerical stability of std
        current_std = torch.max(
            current_std, self.eps * torch.ones_like(current_std)
        )

        return current_mean, current_std


class SpeakerEncoder(torch.nn.Module):
    """The encode_batch path: normalise the features, then embed them."""

    def __init__(self, n_feats=4, emb_dim=3):
        super().__init__()
        self.mean_var_norm = InputNormalization(norm_type="global")
        self.spk_norm = InputNormalization(norm_type="speaker", avg_factor=0.5)
        self.embedding_model = torch.nn.Linear(n_feats, emb_dim)

    def forward(self, feats, wav_lens, spk_ids=None, epoch=0):
        if spk_ids is None:
            feats = self.mean_var_norm(feats, wav_lens, epoch=epoch)
        else:
            feats = self.spk_norm(feats, wav_lens, spk_ids=spk_ids)
        embeddings = self.embedding_model(feats).mean(dim=1)
        return embeddings


encoder = torch.compile(SpeakerEncoder(), dynamic=False)


def make():
    torch.manual_seed(0)
    feats = torch.randn(3, 6, 4)
    wav_lens = torch.tensor([1.0, 0.5, 0.84])
    spk_ids = torch.tensor([[7], [2], [7]])
    return SpeakerEncoder(), [(feats, wav_lens), (feats, wav_lens, spk_ids), (feats, wav_lens, None, 5)]
