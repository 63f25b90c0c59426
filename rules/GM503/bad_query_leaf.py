"""GM503 bad: MaskFormer's decoder queries, a zero leaf created with `requires_grad=self.training` and switched on again in training."""
import torch
from torch import nn


class QueryDecoder(nn.Module):
    def __init__(self, queries=3, dim=4):
        super().__init__()
        self.queries_embedder = nn.Embedding(queries, dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, image_features):
        batch_size = image_features.shape[0]
        queries_embeddings = self.queries_embedder.weight.unsqueeze(0).repeat(batch_size, 1, 1)
        inputs_embeds = torch.zeros_like(queries_embeddings, requires_grad=self.training)  # expect: GM503

        # torch.export.export does not support requires_grad
        if self.training:
            inputs_embeds.requires_grad_(True)

        attention = torch.softmax((inputs_embeds + queries_embeddings) @ image_features.transpose(1, 2), dim=-1)
        return self.proj(attention @ image_features)


def make():
    """Return (eager_callable, input_sets): a model in train mode, where the leaf needs grad."""
    torch.manual_seed(0)
    return QueryDecoder().train(), [(torch.randn(2, 5, 4),)]


compiled = torch.compile(QueryDecoder())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
