"""timm FeatureHookNet: features collected by forward / forward-pre hooks (functools.partial bound methods) into a defaultdict keyed by tensor device, read back and cleared after the body runs.

Source: huggingface/pytorch-image-models@v1.0.31:timm/models/_features.py:67-213,216-224,355-440
Kept: _out_indices_as_tuple, FeatureInfo (the sanity asserts, setdefault of
'index', from_other's deepcopy, get/get_dicts/module_name), FeatureHooks
verbatim (partial(self._collect_output_hook, hook_id), register_forward_hook /
register_forward_pre_hook by hook_type, the `x.device` keyed defaultdict,
get_output's clear-and-reorder), _module_list, _get_feature_info and
FeatureHookNet (the no_rewrite and flatten_sequential constructions, forward's
loop over self.items() with the grad_checkpointing switch, return_dict).
Simplified: checkpoint is torch.utils.checkpoint with use_reentrant=False;
Format(output_fmt) is dropped; a 3-stage conv net with a feature_info list, one
stage hooked with forward_pre.
"""
from collections import OrderedDict, defaultdict
from copy import deepcopy
from functools import partial
from typing import Dict, List, Optional, Sequence, Tuple, Union

import torch
from torch import nn
from torch.utils.checkpoint import checkpoint as _checkpoint

OutIndicesT = Union[int, Tuple[int, ...]]


def checkpoint(function, *args, **kwargs):
    return _checkpoint(function, *args, use_reentrant=False, **kwargs)


def _out_indices_as_tuple(x: Union[int, Tuple[int, ...]]) -> Tuple[int, ...]:
    if isinstance(x, int):
        # if indices is an int, take last N features
        return tuple(range(-x, 0))
    return tuple(x)


class FeatureInfo:

    def __init__(self, feature_info: List[Dict], out_indices: OutIndicesT):
        out_indices = _out_indices_as_tuple(out_indices)
        prev_reduction = 1
        for i, fi in enumerate(feature_info):
            # sanity check the mandatory fields, there may be additional fields depending on the model
            assert 'num_chs' in fi and fi['num_chs'] > 0
            assert 'reduction' in fi and fi['reduction'] >= prev_reduction
            prev_reduction = fi['reduction']
            assert 'module' in fi
            fi.setdefault('index', i)
        self.out_indices = out_indices
        self.info = feature_info

    def from_other(self, out_indices: OutIndicesT):
        out_indices = _out_indices_as_tuple(out_indices)
        return FeatureInfo(deepcopy(self.info), out_indices)

    def get(self, key: str, idx: Optional[Union[int, List[int]]] = None):
        if idx is None:
            return [self.info[i][key] for i in self.out_indices]
        if isinstance(idx, (tuple, list)):
            return [self.info[i][key] for i in idx]
        else:
            return self.info[idx][key]

    def get_dicts(self, keys: Optional[List[str]] = None, idx: Optional[Union[int, List[int]]] = None):
        if idx is None:
            if keys is None:
                return [self.info[i] for i in self.out_indices]
            else:
                return [{k: self.info[i][k] for k in keys} for i in self.out_indices]
        if isinstance(idx, (tuple, list)):
            return [self.info[i] if keys is None else {k: self.info[i][k] for k in keys} for i in idx]
        else:
            return self.info[idx] if keys is None else {k: self.info[idx][k] for k in keys}

    def module_name(self, idx: Optional[Union[int, List[int]]] = None):
        return self.get('module', idx)


class FeatureHooks:
    """ Feature Hook Helper

    This module helps with the setup and extraction of hooks for extracting features from
    internal nodes in a model by node name.

    FIXME This works well in eager Python but needs redesign for torchscript.
    """

    def __init__(
            self,
            hooks: Sequence[Union[str, Dict]],
            named_modules: dict,
            out_map: Sequence[Union[int, str]] = None,
            default_hook_type: str = 'forward',
    ):
        # setup feature hooks
        self._feature_outputs = defaultdict(OrderedDict)
        self._handles = []
        self._hook_ids = []
        modules = {k: v for k, v in named_modules}
        for i, h in enumerate(hooks):
            hook_name = h if isinstance(h, str) else h['module']
            m = modules[hook_name]
            hook_id = out_map[i] if out_map else hook_name
            self._hook_ids.append(hook_id)
            hook_fn = partial(self._collect_output_hook, hook_id)
            hook_type = default_hook_type
            if isinstance(h, dict):
                hook_type = h.get('hook_type', default_hook_type)
            if hook_type == 'forward_pre':
                handle = m.register_forward_pre_hook(hook_fn)
            elif hook_type == 'forward':
                handle = m.register_forward_hook(hook_fn)
            else:
                assert False, "Unsupported hook type"
            self._handles.append(handle)

    def _collect_output_hook(self, hook_id, *args):
        x = args[-1]  # tensor we want is last argument, output for fwd, input for fwd_pre
        if isinstance(x, tuple):
            x = x[0]  # unwrap input tuple
        self._feature_outputs[x.device][hook_id] = x

    def get_output(self, device) -> Dict[str, torch.tensor]:
        output = self._feature_outputs[device]
        self._feature_outputs[device] = OrderedDict()  # clear after reading
        # return in hook registration order, insertion order is not reliable (e.g. grad checkpoint recompute
        # re-fires hooks after the clear above, leaving stale keys in their old positions for the next forward)
        return OrderedDict((k, output[k]) for k in self._hook_ids if k in output)


def _module_list(module, flatten_sequential=False):
    # a yield/iter would be better for this but wouldn't be compatible with torchscript
    ml = []
    for name, module in module.named_children():
        if flatten_sequential and isinstance(module, nn.Sequential):
            # first level of Sequential containers is flattened into containing model
            for child_name, child_module in module.named_children():
                combined = [name, child_name]
                ml.append(('_'.join(combined), '.'.join(combined), child_module))
        else:
            ml.append((name, name, module))
    return ml


def _get_feature_info(net, out_indices: OutIndicesT):
    feature_info = getattr(net, 'feature_info')
    if isinstance(feature_info, FeatureInfo):
        return feature_info.from_other(out_indices)
    elif isinstance(feature_info, (list, tuple)):
        return FeatureInfo(net.feature_info, out_indices)
    else:
        assert False, "Provided feature_info is not valid"


class FeatureHookNet(nn.ModuleDict):
    def __init__(
            self,
            model: nn.Module,
            out_indices: OutIndicesT = (0, 1, 2, 3, 4),
            out_map: Optional[Sequence[Union[int, str]]] = None,
            return_dict: bool = False,
            no_rewrite: Optional[bool] = None,
            flatten_sequential: bool = False,
            default_hook_type: str = 'forward',
    ):
        super().__init__()
        assert not torch.jit.is_scripting()
        self.feature_info = _get_feature_info(model, out_indices)
        self.return_dict = return_dict
        self.grad_checkpointing = False
        if no_rewrite is None:
            no_rewrite = not flatten_sequential
        layers = OrderedDict()
        hooks = []
        if no_rewrite:
            assert not flatten_sequential
            if hasattr(model, 'reset_classifier'):  # make sure classifier is removed?
                model.reset_classifier(0)
            layers['body'] = model
            hooks.extend(self.feature_info.get_dicts())
        else:
            modules = _module_list(model, flatten_sequential=flatten_sequential)
            remaining = {
                f['module']: f['hook_type'] if 'hook_type' in f else default_hook_type
                for f in self.feature_info.get_dicts()
            }
            for new_name, old_name, module in modules:
                layers[new_name] = module
                for fn, fm in module.named_modules(prefix=old_name):
                    if fn in remaining:
                        hooks.append(dict(module=fn, hook_type=remaining[fn]))
                        del remaining[fn]
                if not remaining:
                    break
            assert not remaining, f'Return layers ({remaining}) are not present in model'
        self.update(layers)
        self.hooks = FeatureHooks(hooks, model.named_modules(), out_map=out_map)

    def set_grad_checkpointing(self, enable: bool = True):
        self.grad_checkpointing = enable

    def forward(self, x):
        for i, (name, module) in enumerate(self.items()):
            if self.grad_checkpointing and not torch.jit.is_scripting():
                # Skipping checkpoint of first module because need a gradient at input
                # Skipping last because networks with in-place ops might fail w/ checkpointing enabled
                first_or_last_module = i == 0 or i == max(len(self) - 1, 0)
                skip = first_or_last_module or getattr(module, 'inplace', False) is True
                x = module(x) if skip else checkpoint(module, x)
            else:
                x = module(x)
        out = self.hooks.get_output(x.device)
        return out if self.return_dict else list(out.values())


class TinyNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.ReLU())
        self.stages = nn.Sequential(
            nn.Sequential(nn.Conv2d(4, 6, 3, stride=2, padding=1), nn.ReLU()),
            nn.Sequential(nn.Conv2d(6, 8, 3, stride=2, padding=1), nn.ReLU()),
        )
        self.feature_info = [
            dict(num_chs=4, reduction=1, module='stem'),
            dict(num_chs=6, reduction=2, module='stages.0'),
            dict(num_chs=8, reduction=4, module='stages.1', hook_type='forward_pre'),
        ]

    def forward(self, x):
        return self.stages(self.stem(x))


def features_model(**kwargs):
    return FeatureHookNet(TinyNet(), out_indices=(0, 1, 2), **kwargs)


def main():
    model = torch.compile(features_model(return_dict=True))
    return model(torch.randn(1, 3, 8, 8))


def make():
    torch.manual_seed(0)
    return features_model(return_dict=True), [(torch.randn(2, 3, 8, 8),), (torch.randn(1, 3, 4, 4),)]
