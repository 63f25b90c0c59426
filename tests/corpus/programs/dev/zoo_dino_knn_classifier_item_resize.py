"""DINO (v1) k-NN evaluation: `knn_classifier` walks the test set in chunks, reuses one one-hot buffer with `retrieval_one_hot.resize_(...)`, and accumulates accuracy as Python floats with `correct.narrow(...).sum().item()`.

Source: facebookresearch/dino@7c446df5b9f45747937fb0d72314eb9f7b66930a:eval_knn.py:142-181
Also: eval_knn.py:76-82,238-241 (features are L2-normalised before the call; the call
loops over args.nb_knn with args.temperature).
Kept: knn_classifier verbatim (the 100-chunk split, the top-k gather over
train labels, the temperature-weighted vote, top1/top5 with min(5, k)).
Simplified: features come from a random tensor instead of a DINO backbone
over ImageNet; 200 test and 40 train vectors of dim 8, 5 classes.
"""
import torch
from torch import nn


@torch.no_grad()
def knn_classifier(train_features, train_labels, test_features, test_labels, k, T, num_classes=1000):
    top1, top5, total = 0.0, 0.0, 0
    train_features = train_features.t()
    num_test_images, num_chunks = test_labels.shape[0], 100
    imgs_per_chunk = num_test_images // num_chunks
    retrieval_one_hot = torch.zeros(k, num_classes).to(train_features.device)
    for idx in range(0, num_test_images, imgs_per_chunk):
        # get the features for test images
        features = test_features[
            idx : min((idx + imgs_per_chunk), num_test_images), :
        ]
        targets = test_labels[idx : min((idx + imgs_per_chunk), num_test_images)]
        batch_size = targets.shape[0]

        # calculate the dot product and compute top-k neighbors
        similarity = torch.mm(features, train_features)
        distances, indices = similarity.topk(k, largest=True, sorted=True)
        candidates = train_labels.view(1, -1).expand(batch_size, -1)
        retrieved_neighbors = torch.gather(candidates, 1, indices)

        retrieval_one_hot.resize_(batch_size * k, num_classes).zero_()
        retrieval_one_hot.scatter_(1, retrieved_neighbors.view(-1, 1), 1)
        distances_transform = distances.clone().div_(T).exp_()
        probs = torch.sum(
            torch.mul(
                retrieval_one_hot.view(batch_size, -1, num_classes),
                distances_transform.view(batch_size, -1, 1),
            ),
            1,
        )
        _, predictions = probs.sort(1, True)

        # find the predictions that match the target
        correct = predictions.eq(targets.data.view(-1, 1))
        top1 = top1 + correct.narrow(1, 0, 1).sum().item()
        top5 = top5 + correct.narrow(1, 0, min(5, k)).sum().item()  # top5 does not make sense if k < 5
        total += targets.size(0)
    top1 = top1 * 100.0 / total
    top5 = top5 * 100.0 / total
    return top1, top5


knn = torch.compile(knn_classifier)


def make():
    torch.manual_seed(0)
    train_features = nn.functional.normalize(torch.randn(40, 8), dim=1, p=2)
    test_features = nn.functional.normalize(torch.randn(200, 8), dim=1, p=2)
    train_labels = torch.randint(0, 5, (40,))
    test_labels = torch.randint(0, 5, (200,))
    return knn_classifier, [
        (train_features, train_labels, test_features, test_labels, 10, 0.07, 5),
        (train_features, train_labels, test_features, test_labels, 3, 0.07, 5),
    ]
