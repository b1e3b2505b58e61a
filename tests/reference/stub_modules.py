"""Module stand-ins for running official code from packages installed out of tree without their
package-level imports (torchvision, training code, weight downloads): the flow reference scripts
(gfpgan_flow_reference.py, codeformer_flow_reference.py) load the official files through these."""
import importlib.util
import sys
import types


def module(name, path=None, **attrs):
    """sys.modules[name]: the file at `path` run as that module, or else an empty package (the one
    already there, if any); `attrs` are set on it."""
    if path is not None:
        spec = importlib.util.spec_from_file_location(name, path)
        m = importlib.util.module_from_spec(spec)
        sys.modules[name] = m
        spec.loader.exec_module(m)
    else:
        m = sys.modules.get(name) or types.ModuleType(name)
        if not hasattr(m, "__path__"):
            m.__path__ = []
        sys.modules[name] = m
    for k, v in attrs.items():
        setattr(m, k, v)
    return m


def normalize(tensor, mean, std, inplace=False):
    """torchvision.transforms.functional.normalize: tensor.sub_(mean).div_(std) per channel."""
    import torch
    t = tensor if inplace else tensor.clone()
    m = torch.as_tensor(mean, dtype=t.dtype).view(-1, 1, 1)
    s = torch.as_tensor(std, dtype=t.dtype).view(-1, 1, 1)
    return t.sub_(m).div_(s)


def torchvision_stubs():
    """The torchvision the official flows import: normalize above, and make_grid (never reached
    for one face) raising."""
    module("torchvision")
    module("torchvision.utils", make_grid=lambda *a, **k: (_ for _ in ()).throw(RuntimeError("make_grid")))
    module("torchvision.transforms")
    module("torchvision.transforms.functional", normalize=normalize)
