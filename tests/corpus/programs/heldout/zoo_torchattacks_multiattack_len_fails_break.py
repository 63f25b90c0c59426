"""torchattacks' MultiAttack: each sub-attack runs on `images[fails]`, successes are found with `torch.masked_select(fails, wrongs)` and written back with `final_images[succeeds] = ...`, and the loop stops `if len(fails) == 0`; the FGSM sub-attacks take `torch.autograd.grad` and one clamps with `clamp_heuristic`'s `torch.min(original_image).item()` bounds.

Source: Harry24k/adversarial-attacks-pytorch@3d182996a69dd6c0a1d3bee69f5d3273d96a6fcc:torchattacks/attacks/multiattack.py:7-70
Also: torchattacks/attacks/fgsm.py@005d51c26d2a8f85aa48208c3ce6b65031c0a430:7-60 (FGSM),
torchattacks/clamp_methods.py@005d51c26d2a8f85aa48208c3ce6b65031c0a430 (clamp_0_1, clamp_heuristic).
Kept: MultiAttack.__init__ (model-identity check) and forward verbatim
(including the verbose success-rate record helpers), FGSM.forward and the two
clamp methods verbatim.
Simplified: the Attack base keeps only what these reach (model, device,
targeted flag, model.eval() around forward); save() is dropped.
"""
import torch
import torch.nn as nn


def clamp_0_1(original_image, adv_image):
    return torch.clamp(adv_image, 0, 1)


def clamp_heuristic(original_image, adv_image):
    return torch.clamp(adv_image, torch.min(original_image).item(), torch.max(original_image).item())


class Attack(object):
    def __init__(self, name, model):
        self.attack = name
        self.model = model
        self.model_name = str(model).split("(")[0]
        self.training = model.training
        self.device = next(model.parameters()).device
        self._targeted = False
        self._supported_mode = ['default']

    def forward(self, *input):
        raise NotImplementedError

    def __call__(self, *input, **kwargs):
        given_training = self.model.training
        self.model.eval()
        images = self.forward(*input, **kwargs)
        if given_training:
            self.model.train()
        return images


class FGSM(Attack):
    def __init__(self, model, eps=0.007, clamp_function=clamp_0_1):
        super().__init__("FGSM", model)
        self.eps = eps
        self._supported_mode = ['default', 'targeted']
        self.clamp_function = clamp_function

    def forward(self, images, labels):
        r"""
        Overridden.
        """
        images = images.clone().detach().to(self.device)
        labels = labels.clone().detach().to(self.device)

        if self._targeted:
            target_labels = self._get_target_label(images, labels)

        loss = nn.CrossEntropyLoss()

        images.requires_grad = True
        outputs = self.model(images)

        # Calculate loss
        if self._targeted:
            cost = -loss(outputs, target_labels)
        else:
            cost = loss(outputs, labels)

        # Update adversarial images
        grad = torch.autograd.grad(cost, images,
                                   retain_graph=False, create_graph=False)[0]

        adv_images = images + self.eps*grad.sign()
        adv_images = self.clamp_function(images, adv_images).detach()

        return adv_images


class MultiAttack(Attack):
    def __init__(self, attacks, verbose=False):

        # Check validity
        ids = []
        for attack in attacks:
            ids.append(id(attack.model))

        if len(set(ids)) != 1:
            raise ValueError("At least one of attacks is referencing a different model.")

        super().__init__("MultiAttack", attack.model)
        self.attacks = attacks
        self.verbose = verbose
        self._accumulate_multi_atk_records = False
        self._multi_atk_records = [0.0]
        self._supported_mode = ['default']

    def forward(self, images, labels):
        r"""
        Overridden.
        """
        batch_size = images.shape[0]
        fails = torch.arange(batch_size).to(self.device)
        final_images = images.clone().detach().to(self.device)
        labels = labels.clone().detach().to(self.device)

        multi_atk_records = [batch_size]

        for _, attack in enumerate(self.attacks):
            adv_images = attack(images[fails], labels[fails])

            outputs = self.model(adv_images)
            _, pre = torch.max(outputs.data, 1)

            corrects = (pre == labels[fails])
            wrongs = ~corrects

            succeeds = torch.masked_select(fails, wrongs)
            succeeds_of_fails = torch.masked_select(torch.arange(fails.shape[0]).to(self.device), wrongs)

            final_images[succeeds] = adv_images[succeeds_of_fails]

            fails = torch.masked_select(fails, corrects)
            multi_atk_records.append(len(fails))

            if len(fails) == 0:
                break

        if self.verbose:
            print(self._return_sr_record(multi_atk_records))

        if self._accumulate_multi_atk_records:
            self._update_multi_atk_records(multi_atk_records)

        return final_images

    def _covert_to_success_rates(self, multi_atk_records):
        sr = [((1-multi_atk_records[i]/multi_atk_records[0])*100) for i in range(1, len(multi_atk_records))]
        return sr

    def _return_sr_record(self, multi_atk_records):
        sr = self._covert_to_success_rates(multi_atk_records)
        return "Attack success rate: "+" | ".join(["%2.2f %%"%item for item in sr])

    def _update_multi_atk_records(self, multi_atk_records):
        for i, item in enumerate(multi_atk_records):
            self._multi_atk_records[i] += item


def build_attack(verbose=False):
    model = nn.Sequential(nn.Flatten(), nn.Linear(12, 3))
    atk1 = FGSM(model, eps=0.05, clamp_function=clamp_heuristic)
    atk2 = FGSM(model, eps=2.0)
    return MultiAttack([atk1, atk2], verbose=verbose)


def make():
    torch.manual_seed(0)
    atk = build_attack(verbose=True)
    images = torch.rand(4, 3, 2, 2)
    with torch.no_grad():
        preds = atk.model(images).argmax(1)
    # labels equal to the clean predictions: some survive the small-eps attack;
    # an out-of-reach label makes every sample "fail" only after both attacks
    return atk.__call__, [(images, preds), (images, (preds + 1) % 3)]


attack = torch.compile(build_attack().__call__)
