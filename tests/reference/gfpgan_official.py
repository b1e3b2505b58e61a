#!/usr/bin/python3
"""Loads the official GFPGANv1Clean (PyPI `gfpgan`: gfpgan/archs/gfpganv1_clean_arch.py and
stylegan2_clean_arch.py) without importing the `gfpgan` and `basicsr` packages themselves: their
package __init__ files pull in torchvision, cv2 training utilities and a registry scan, none of
which the two architecture files need. Only `basicsr.utils.registry.ARCH_REGISTRY` (a decorator)
and `basicsr.archs.arch_util.default_init_weights` (initialisation, overwritten by the callers'
random weights) are referenced; both are given inert stand-ins here.

The official code is never copied into this repository. Install it out of tree, e.g.

    /usr/bin/python3 -m pip install --no-deps --target /tmp/gfpgan-official gfpgan basicsr

and point GFPGAN_OFFICIAL at that directory (or pass it to `load`).
"""
import importlib.util
import os
import sys
import types

# GFPGANer(arch='clean') builds every released clean model (GFPGANv1.3, GFPGANv1.4,
# GFPGANCleanv1-NoCE-C2) with these arguments.
OFFICIAL_ARGS = dict(out_size=512, num_style_feat=512, channel_multiplier=2, decoder_load_path=None,
                     fix_decoder=False, num_mlp=8, input_is_latent=True, different_w=True, narrow=1,
                     sft_half=True)


def _stub(name, **attrs):
    m = types.ModuleType(name)
    m.__path__ = []
    for k, v in attrs.items():
        setattr(m, k, v)
    sys.modules[name] = m
    return m


class _Registry:
    def register(self, obj=None, suffix=None):
        return obj if obj is not None else (lambda o: o)


def load(root=None):
    """The official gfpganv1_clean_arch module, loaded from `root` (a directory holding gfpgan/)."""
    root = root or os.environ.get('GFPGAN_OFFICIAL', '/tmp/gfpgan-official')
    archs = os.path.join(root, 'gfpgan', 'archs')
    if not os.path.isfile(os.path.join(archs, 'gfpganv1_clean_arch.py')):
        sys.exit(f'official GFPGAN code not found under {root} (set GFPGAN_OFFICIAL; see this file\'s header)')
    if 'gfpgan.archs.gfpganv1_clean_arch' in sys.modules:
        return sys.modules['gfpgan.archs.gfpganv1_clean_arch']
    for n in ('basicsr', 'basicsr.utils', 'basicsr.archs'):
        _stub(n)
    _stub('basicsr.utils.registry', ARCH_REGISTRY=_Registry())
    _stub('basicsr.archs.arch_util', default_init_weights=lambda *a, **k: None)
    _stub('gfpgan')
    pkg = _stub('gfpgan.archs')
    pkg.__path__ = [archs]

    def from_file(name):
        spec = importlib.util.spec_from_file_location(name, os.path.join(archs, name.split('.')[-1] + '.py'))
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod
        spec.loader.exec_module(mod)
        return mod

    from_file('gfpgan.archs.stylegan2_clean_arch')
    return from_file('gfpgan.archs.gfpganv1_clean_arch')


def build(**kw):
    args = dict(OFFICIAL_ARGS)
    args.update(kw)
    return load().GFPGANv1Clean(**args)
