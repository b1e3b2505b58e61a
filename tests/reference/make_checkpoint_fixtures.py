#!/usr/bin/python3
"""Writes the converter's test fixtures into tests/fixtures/checkpoints/ and the checkpoint fuzz
seeds into tests/fuzz/corpus/. Run with /usr/bin/python3 (needs torch + numpy); deterministic.

  gpen_s64.{zip.pth,legacy.pth,safetensors}  tiny GPEN FullGenerator in the official layout
      (size 64, channel_multiplier 1, narrow 1/64, style_dim 8, n_mlp 2); the zip one is nested
      under 'g_ema' with 'module.' prefixes, the legacy one is a plain OrderedDict with _metadata
  gpen_s64.ref.{json,bin}       every source tensor, raw float32, for bit-identical checks
  gpen_s64.expected.{json,bin}  the converted tensors in the engine's conventions (float32),
                                computed here independently (docs/weights-format.md)
  mnet.{zip.pth,legacy.pth}     RetinaFace mobilenet0.25 layout; every float tensor is a view into
      one shared storage (keeps the files small and exercises storage offsets); the zip one is
      nested under 'state_dict' with 'module.' prefixes
  mnet.safetensors              the same values as float16 (they are all float16-exact)
  mnet.ref.json                 per-tensor CRC-32 of the raw float32 bytes
  mnet.expected.{json,bin}      folded conv weights/biases of a few convs
  bad_*.pth, no_datapkl.zip     inputs that must be refused with a clear message

Also: `--big-gpen512 PATH` writes a random GPEN-BFR-512-layout checkpoint (~284 MB, zip format)
for the conversion benchmark; it is never committed.
"""
import argparse
import collections
import io
import json
import os
import pickle
import struct
import sys
import zipfile
import zlib

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from official_layout import gpen_layout, retinaface_layout, retinaface_units  # noqa: E402

FIX = os.path.normpath(os.path.join(HERE, '..', 'fixtures', 'checkpoints'))
CORPUS = os.path.normpath(os.path.join(HERE, '..', 'fuzz', 'corpus'))

FIR = np.outer([1, 3, 3, 1], [1, 3, 3, 1]).astype(np.float32) / 64
GPEN_TINY = dict(size=64, cm=1, narrow=1 / 64, style_dim=8, n_mlp=2)


# ---------------------------------------------------------------------------------------------
# Writers

def with_metadata(sd):
    """A state dict as nn.Module.state_dict() returns it: an OrderedDict carrying _metadata."""
    od = collections.OrderedDict(sd)
    od._metadata = collections.OrderedDict([('', {'version': 1})])
    return od


def save_zip(obj, path):
    torch.save(obj, path)


def save_legacy(obj, path):
    torch.save(obj, path, _use_new_zipfile_serialization=False)


def save_safetensors(tensors, path, metadata=None):
    """safetensors by hand: u64 header length, JSON header (space-padded to 8), raw data."""
    codes = {np.float32: 'F32', np.float16: 'F16', np.int64: 'I64'}
    header, blobs, off = {}, [], 0
    for name, a in tensors.items():
        a = np.require(a, requirements='C')  # keeps 0-d arrays 0-d
        b = a.tobytes()
        header[name] = {'dtype': codes[a.dtype.type], 'shape': list(a.shape), 'data_offsets': [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    if metadata:
        header['__metadata__'] = metadata
    h = json.dumps(header, separators=(',', ':')).encode()
    h += b' ' * (-len(h) % 8)
    with open(path, 'wb') as f:
        f.write(struct.pack('<Q', len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)


def write_manifest(path_base, arrays, with_bin=True):
    """<base>.json lists name/dtype/shape/offset/bytes/crc32; <base>.bin holds the raw bytes."""
    entries, blob = [], bytearray()
    for name, a in arrays:
        b = np.require(a, requirements='C').tobytes()
        entries.append({'name': name, 'dtype': str(a.dtype), 'shape': list(a.shape), 'offset': len(blob),
                        'bytes': len(b), 'crc32': zlib.crc32(b)})
        blob += b
    with open(path_base + '.json', 'w') as f:
        json.dump(entries, f, indent=0)
    if with_bin:
        with open(path_base + '.bin', 'wb') as f:
            f.write(bytes(blob))


def write_gpw(path, arch, config, tensors):
    """A minimal .gpw writer (docs/weights-format.md), independent of the C++ one."""
    table, off = [], 0
    for name, a in tensors:
        nbytes = a.nbytes
        table.append({'name': name, 'dtype': {np.float32: 'f32', np.float16: 'f16'}[a.dtype.type],
                      'shape': list(a.shape), 'offset': off, 'bytes': nbytes})
        off += -(-nbytes // 256) * 256
    header = json.dumps({'format': 'gpw', 'version': 1, 'arch': arch, 'config': config, 'storage_dtype': 'f32',
                         'tensors': table}).encode()
    data_offset = -(-(64 + len(header)) // 256) * 256
    pre = struct.pack('<4sIQQQQII16x', b'GPW1', 1, 64, len(header), data_offset, off, zlib.crc32(header), 0)
    out = bytearray(pre + header)
    out += b'\0' * (data_offset - len(out))
    for (name, a), t in zip(tensors, table):
        out += a.tobytes()
        out += b'\0' * (-a.nbytes % 256)
    with open(path, 'wb') as f:
        f.write(bytes(out))


# ---------------------------------------------------------------------------------------------
# GPEN

def gpen_state(rng, size, cm, narrow, style_dim, n_mlp):
    sd = collections.OrderedDict()
    for name, shape, kind in gpen_layout(size, cm, narrow, style_dim, n_mlp):
        if kind == 'buffer':
            a = FIR * (4 if ('blur' in name or 'upsample' in name) else 1)
        elif name.endswith('modulation.bias'):
            a = 1 + 0.1 * rng.standard_normal(shape, dtype=np.float32)
        else:
            a = rng.standard_normal(shape, dtype=np.float32)
        sd[name] = np.ascontiguousarray(a, dtype=np.float32)
    return sd


def gpen_expected(sd, style_dim):
    """The engine-convention tensors, following docs/weights-format.md literally."""
    f32 = np.float32
    out = []
    for name, a in sd.items():
        if name.endswith('.kernel'):
            continue
        if name.startswith('generator.style.'):
            if name.endswith('.weight'):
                out.append((name, a * f32((1 / np.sqrt(style_dim)) * 0.01)))
            else:
                out.append((name, a * f32(0.01)))
        elif name == 'generator.input.input':
            out.append((name, np.ascontiguousarray(a.transpose(0, 2, 3, 1))))
        elif name.endswith('.conv.weight'):
            _, o, i, k, _ = a.shape
            w = a[0] * f32(1 / np.sqrt(i * k * k))
            out.append((name, np.ascontiguousarray(w.transpose(2, 3, 1, 0))))
            if 'to_rgb' not in name:
                q = (w.astype(np.float64) ** 2).sum(axis=(2, 3)).astype(f32)
                out.append((name[:-len('.conv.weight')] + '.conv.demod_q', q))
        elif name.endswith('.conv.modulation.weight'):
            out.append((name, a * f32(1 / np.sqrt(style_dim))))
        elif name.startswith('generator.to_rgb') and name.endswith('.bias') and a.ndim == 4:
            out.append((name, a.reshape(3)))
        elif name.startswith('ecd') and name.endswith('.weight'):
            o, i, k, _ = a.shape
            out.append((name, np.ascontiguousarray((a * f32(1 / np.sqrt(i * k * k))).transpose(2, 3, 1, 0))))
        elif name == 'final_linear.0.weight':
            o, n = a.shape
            c = n // 16
            w = (a * f32(1 / np.sqrt(n))).reshape(o, c, 4, 4).transpose(0, 2, 3, 1).reshape(o, n)
            out.append((name, np.ascontiguousarray(w)))
        else:
            out.append((name, a))
    return out


def make_gpen(rng):
    c = GPEN_TINY
    sd = gpen_state(rng, c['size'], c['cm'], c['narrow'], c['style_dim'], c['n_mlp'])
    tsd = collections.OrderedDict((k, torch.from_numpy(v.copy())) for k, v in sd.items())
    nested = {'g_ema': with_metadata(('module.' + k, v) for k, v in tsd.items()), 'iter': 7,
              'args': {'size': c['size'], 'lr': 0.002, 'name': 'tiny'}}
    save_zip(nested, os.path.join(FIX, 'gpen_s64.zip.pth'))
    save_legacy(with_metadata(tsd), os.path.join(FIX, 'gpen_s64.legacy.pth'))
    save_safetensors(sd, os.path.join(FIX, 'gpen_s64.safetensors'), {'format': 'pt'})
    write_manifest(os.path.join(FIX, 'gpen_s64.ref'), list(sd.items()))
    write_manifest(os.path.join(FIX, 'gpen_s64.expected'), gpen_expected(sd, c['style_dim']))


# ---------------------------------------------------------------------------------------------
# RetinaFace mobilenet0.25 with one shared storage

def make_mnet(rng):
    layout = retinaface_layout('mobilenet0.25')
    biggest = max(int(np.prod(s)) for _, s, k in layout if k == 'float')
    base = rng.uniform(-2, 2, biggest + 256).astype(np.float16).astype(np.float32)
    positive = 4096  # running_var views come from here: strictly positive
    base[:positive] = np.abs(base[:positive]) + np.float32(0.0625)
    base = base.astype(np.float16).astype(np.float32)  # keep every value float16-exact
    base_t = torch.from_numpy(base)
    sd = collections.OrderedDict()
    for name, shape, kind in layout:
        if kind == 'int':
            sd[name] = torch.tensor(int(rng.integers(0, 100000)), dtype=torch.int64)
            continue
        n = int(np.prod(shape))
        hi = (positive if name.endswith('running_var') else len(base)) - n
        off = int(rng.integers(0, hi + 1))
        sd[name] = base_t[off:off + n].view(*shape)
    save_legacy(with_metadata(sd), os.path.join(FIX, 'mnet.legacy.pth'))
    save_zip({'state_dict': with_metadata(('module.' + k, v) for k, v in sd.items()), 'epoch': 3},
             os.path.join(FIX, 'mnet.zip.pth'))
    st = collections.OrderedDict()
    for k, v in sd.items():
        a = v.numpy()
        st[k] = a.astype(np.float16) if a.dtype == np.float32 else a
    save_safetensors(st, os.path.join(FIX, 'mnet.safetensors'))
    write_manifest(os.path.join(FIX, 'mnet.ref'), [(k, v.numpy()) for k, v in sd.items()], with_bin=False)
    # Folded conv + BN, per docs/weights-format.md, for a few representative convs.
    want = ['body.stage1.0.0', 'body.stage1.1.0', 'body.stage1.2.3', 'body.stage3.1.0', 'fpn.output1.0',
            'ssh1.conv7x7_3.0', 'ssh2.conv5X5_1.0', 'ClassHead.2.conv1x1', 'LandmarkHead.0.conv1x1']
    exp = []
    units = {u[0]: u for u in retinaface_units('mobilenet0.25')}
    for conv in want:
        _, bn, o, i, k, g, has_bias = units[conv]
        w = sd[conv + '.weight'].numpy().astype(np.float64)
        if bn:
            s = sd[bn + '.weight'].numpy().astype(np.float64) / np.sqrt(sd[bn + '.running_var'].numpy() + 1e-5)
            b = sd[bn + '.bias'].numpy() - sd[bn + '.running_mean'].numpy() * s
        else:
            s = np.ones(o)
            b = sd[conv + '.bias'].numpy().astype(np.float64)
        exp.append((conv + '.weight', np.ascontiguousarray((w * s[:, None, None, None]).transpose(2, 3, 1, 0)).astype(np.float32)))
        exp.append((conv + '.bias', b.astype(np.float32)))
    write_manifest(os.path.join(FIX, 'mnet.expected'), exp)


# ---------------------------------------------------------------------------------------------
# Inputs to refuse, and fuzz seeds

LEGACY_MAGIC = 0x1950a86a20f9469cfc6c


def legacy_bytes(main_pickle, keys=(), storages=b''):
    f = io.BytesIO()
    pickle.dump(LEGACY_MAGIC, f, protocol=2)
    pickle.dump(1001, f, protocol=2)
    pickle.dump({'protocol_version': 1001, 'little_endian': True, 'type_sizes': {'short': 2, 'int': 4, 'long': 4}},
                f, protocol=2)
    f.write(main_pickle)
    pickle.dump(list(keys), f, protocol=2)
    f.write(storages)
    return f.getvalue()


def zip_with(path, files):
    with zipfile.ZipFile(path, 'w', zipfile.ZIP_STORED) as z:
        for name, data in files.items():
            z.writestr(name, data)


def make_bad():
    import argparse as ap
    save_zip({'w': torch.zeros(2), 'args': ap.Namespace(lr=1)}, os.path.join(FIX, 'bad_global.pth'))
    save_legacy(torch.nn.Linear(2, 2), os.path.join(FIX, 'bad_module.pth'))
    save_zip({'w': torch.arange(6.0).reshape(2, 3).t()}, os.path.join(FIX, 'bad_noncontig.pth'))
    evil = b'\x80\x02cos\nsystem\nX\x04\x00\x00\x00trueq\x00\x85R.'
    zip_with(os.path.join(FIX, 'bad_os_system.pth'), {'archive/data.pkl': evil, 'archive/version': b'3\n'})
    with open(os.path.join(FIX, 'bad_os_system_legacy.pth'), 'wb') as f:
        f.write(legacy_bytes(evil))
    zip_with(os.path.join(FIX, 'bad_inst.pth'), {'archive/data.pkl': b'(iargparse\nNamespace\n.'})
    zip_with(os.path.join(FIX, 'no_datapkl.zip'), {'archive/version': b'3\n', 'archive/data/0': b'\0' * 16})


def make_seeds():
    ck = os.path.join(CORPUS, 'checkpoint')
    gw = os.path.join(CORPUS, 'gpw')
    os.makedirs(ck, exist_ok=True)
    os.makedirs(gw, exist_ok=True)
    small = with_metadata([('module.a.weight', torch.arange(6.0).reshape(2, 3)),
                           ('a.bias', torch.tensor([0.5, -1.0], dtype=torch.float16)),
                           ('bn.num_batches_tracked', torch.tensor(3))])
    save_zip({'state_dict': small, 'epoch': 1}, os.path.join(ck, 'seed_zip.pth'))
    save_legacy(small, os.path.join(ck, 'seed_legacy.pth'))
    base = torch.arange(10.0)
    save_legacy(collections.OrderedDict([('x', base[2:6].view(2, 2)), ('y', base[4:10])]),
                os.path.join(ck, 'seed_legacy_views.pth'))
    save_safetensors({'a.weight': np.arange(6, dtype=np.float32).reshape(2, 3), 'a.bias': np.ones(2, np.float16)},
                     os.path.join(ck, 'seed.safetensors'), {'format': 'pt'})
    for name in ('bad_os_system.pth', 'bad_noncontig.pth', 'bad_os_system_legacy.pth'):
        with open(os.path.join(FIX, name), 'rb') as src, open(os.path.join(ck, 'seed_' + name), 'wb') as dst:
            dst.write(src.read())
    write_gpw(os.path.join(gw, 'seed_small.gpw'), 'gpen', {'size': 16},
              [('a.weight', np.arange(6, dtype=np.float32).reshape(2, 3)),
               ('a.bias', np.ones(3, np.float16)), ('empty', np.zeros((0, 4), np.float32))])
    write_gpw(os.path.join(gw, 'seed_retina.gpw'), 'retinaface', {'backbone': 'mobilenet0.25'},
              [('body.conv.weight', np.ones((3, 3, 1, 8), np.float32))])


# ---------------------------------------------------------------------------------------------

def make_big_gpen512(path):
    """GPEN-BFR-512 layout with random values, zip format (benchmark input, ~284 MB)."""
    rng = np.random.default_rng(512)
    sd = collections.OrderedDict()
    for name, shape, kind in gpen_layout(512, 2, 1.0):
        a = FIR if kind == 'buffer' else rng.standard_normal(shape, dtype=np.float32)
        sd[name] = torch.from_numpy(np.ascontiguousarray(a, dtype=np.float32))
    torch.save(sd, path)
    print(f'{path}: {os.path.getsize(path)} bytes, {sum(v.numel() for v in sd.values())} values')


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument('--big-gpen512', metavar='PATH', help='only write the large benchmark checkpoint to PATH')
    a = p.parse_args()
    if a.big_gpen512:
        make_big_gpen512(a.big_gpen512)
        return
    os.makedirs(FIX, exist_ok=True)
    rng = np.random.default_rng(20240601)
    make_gpen(rng)
    make_mnet(rng)
    make_bad()
    make_seeds()
    total = sum(os.path.getsize(os.path.join(FIX, f)) for f in os.listdir(FIX))
    print(f'wrote {len(os.listdir(FIX))} fixtures into {FIX} ({total} bytes)')


if __name__ == '__main__':
    main()
