#!/usr/bin/python3
"""Official state-dict layouts (tensor names and shapes) of GPEN FullGenerator for any
configuration and of RetinaFace (mobilenet0.25 / resnet50), written from
../shared/reference/gpen-semantics.md. Mirrors converter/layouts.cpp; `--self-test` checks both
against ../shared/reference/checkpoint_layouts.json.

Each layout is a list of (name, shape, kind) with kind in {'float', 'buffer', 'int'}: 'buffer'
marks the FIR kernels the converter drops, 'int' the BatchNorm counters it ignores.
"""
import json
import math
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
LAYOUTS_JSON = os.path.normpath(os.path.join(HERE, '..', '..', '..', 'shared', 'reference',
                                             'checkpoint_layouts.json'))


def gpen_channels(res, cm, narrow):
    if res <= 32:
        return int(512 * narrow)
    return int({64: 256, 128: 128, 256: 64, 512: 32, 1024: 16, 2048: 8}[res] * cm * narrow)


def gpen_layout(size, cm=2, narrow=1.0, style_dim=512, n_mlp=8):
    L = int(math.log2(size))
    assert 2 ** L == size and 16 <= size <= 2048
    ch = lambda r: gpen_channels(r, cm, narrow)
    D = style_dim
    t = []
    add = lambda n, s, kind='float': t.append((n, list(s), kind))
    for k in range(1, n_mlp + 1):
        add(f'generator.style.{k}.weight', [D, D])
        add(f'generator.style.{k}.bias', [D])
    c4 = ch(4)
    add('generator.input.input', [1, c4, 4, 4])

    def styled(p, cin, cout, up):
        add(p + '.conv.weight', [1, cout, cin, 3, 3])
        if up:
            add(p + '.conv.blur.kernel', [4, 4], 'buffer')
        add(p + '.conv.modulation.weight', [cin, D])
        add(p + '.conv.modulation.bias', [cin])
        add(p + '.noise.weight', [1])
        add(p + '.activate.bias', [2 * cout])

    def to_rgb(p, cin, up):
        add(p + '.bias', [1, 3, 1, 1])
        if up:
            add(p + '.upsample.kernel', [4, 4], 'buffer')
        add(p + '.conv.weight', [1, 3, cin, 1, 1])
        add(p + '.conv.modulation.weight', [cin, D])
        add(p + '.conv.modulation.bias', [cin])

    styled('generator.conv1', c4, c4, False)
    to_rgb('generator.to_rgb1', 2 * c4, False)
    cin = 2 * c4
    for i in range(L - 2):
        cout = ch(2 ** (i + 3))
        styled(f'generator.convs.{2 * i}', cin, cout, True)
        styled(f'generator.convs.{2 * i + 1}', 2 * cout, cout, False)
        cin = 2 * cout
    for i in range(L - 2):
        to_rgb(f'generator.to_rgbs.{i}', 2 * ch(2 ** (i + 3)), True)
    add('ecd0.0.0.weight', [ch(size), 3, 1, 1])
    add('ecd0.0.1.bias', [ch(size)])
    for j in range(1, L - 1):
        add(f'ecd{j}.0.0.kernel', [4, 4], 'buffer')
        add(f'ecd{j}.0.1.weight', [ch(size >> j), ch(size >> (j - 1)), 3, 3])
        add(f'ecd{j}.0.2.bias', [ch(size >> j)])
    add('final_linear.0.weight', [D, 16 * c4])
    add('final_linear.0.bias', [D])
    return t


def retinaface_units(backbone):
    """(conv path, bn path or None, out, in, k, groups, conv_bias) in state-dict order."""
    u = []
    if backbone == 'mobilenet0.25':
        def dw(p, i, o):
            u.append((p + '.0', p + '.1', i, i, 3, i, False))
            u.append((p + '.3', p + '.4', o, i, 1, 1, False))
        u.append(('body.stage1.0.0', 'body.stage1.0.1', 8, 3, 3, 1, False))
        for k, (i, o) in enumerate([(8, 16), (16, 32), (32, 32), (32, 64), (64, 64)]):
            dw(f'body.stage1.{k + 1}', i, o)
        dw('body.stage2.0', 64, 128)
        for k in range(1, 6):
            dw(f'body.stage2.{k}', 128, 128)
        dw('body.stage3.0', 128, 256)
        dw('body.stage3.1', 256, 256)
        cin, cout = 32, 64
    elif backbone == 'resnet50':
        u.append(('body.conv1', 'body.bn1', 64, 3, 7, 1, False))
        inplanes = 64
        for l, blocks in enumerate([3, 4, 6, 3]):
            planes = 64 << l
            for b in range(blocks):
                p = f'body.layer{l + 1}.{b}.'
                u.append((p + 'conv1', p + 'bn1', planes, inplanes, 1, 1, False))
                u.append((p + 'conv2', p + 'bn2', planes, planes, 3, 1, False))
                u.append((p + 'conv3', p + 'bn3', 4 * planes, planes, 1, 1, False))
                if b == 0:
                    u.append((p + 'downsample.0', p + 'downsample.1', 4 * planes, inplanes, 1, 1, False))
                inplanes = 4 * planes
        cin, cout = 256, 256
    else:
        raise ValueError(backbone)
    o = cout
    for name, i, k in [('output1', 2 * cin, 1), ('output2', 4 * cin, 1), ('output3', 8 * cin, 1),
                       ('merge1', o, 3), ('merge2', o, 3)]:
        u.append((f'fpn.{name}.0', f'fpn.{name}.1', o, i, k, 1, False))
    for s in (1, 2, 3):
        p = f'ssh{s}.'
        u.append((p + 'conv3X3.0', p + 'conv3X3.1', o // 2, o, 3, 1, False))
        u.append((p + 'conv5X5_1.0', p + 'conv5X5_1.1', o // 4, o, 3, 1, False))
        u.append((p + 'conv5X5_2.0', p + 'conv5X5_2.1', o // 4, o // 4, 3, 1, False))
        u.append((p + 'conv7X7_2.0', p + 'conv7X7_2.1', o // 4, o // 4, 3, 1, False))
        u.append((p + 'conv7x7_3.0', p + 'conv7x7_3.1', o // 4, o // 4, 3, 1, False))
    for head, n in [('ClassHead', 4), ('BboxHead', 8), ('LandmarkHead', 20)]:
        for i in range(3):
            u.append((f'{head}.{i}.conv1x1', None, n, o, 1, 1, True))
    return u


def retinaface_layout(backbone):
    t = []
    for conv, bn, o, i, k, g, bias in retinaface_units(backbone):
        t.append((conv + '.weight', [o, i // g, k, k], 'float'))
        if bias:
            t.append((conv + '.bias', [o], 'float'))
        if bn:
            for p in ('weight', 'bias', 'running_mean', 'running_var'):
                t.append((f'{bn}.{p}', [o], 'float'))
            t.append((f'{bn}.num_batches_tracked', [], 'int'))
    return t


def self_test():
    ref = json.load(open(LAYOUTS_JSON))
    cases = {
        'GPEN-BFR-256': lambda c: gpen_layout(c['size'], c['channel_multiplier'], c['narrow'], c['style_dim'], c['n_mlp']),
        'GPEN-BFR-512': lambda c: gpen_layout(c['size'], c['channel_multiplier'], c['narrow'], c['style_dim'], c['n_mlp']),
        'GPEN-BFR-1024': lambda c: gpen_layout(c['size'], c['channel_multiplier'], c['narrow'], c['style_dim'], c['n_mlp']),
        'RetinaFace-R50': lambda c: retinaface_layout('resnet50'),
        'RetinaFace-mobilenet0.25': lambda c: retinaface_layout('mobilenet0.25'),
    }
    ok = True
    for name, fn in cases.items():
        mine = [(n, s) for n, s, _ in fn(ref[name]['config'])]
        theirs = [(n, s) for n, s, _ in ref[name]['tensors']]
        same = mine == theirs
        ok &= same
        print(f'{name}: {len(mine)} tensors, {"matches" if same else "DIFFERS from"} checkpoint_layouts.json')
    return ok


if __name__ == '__main__':
    sys.exit(0 if self_test() else 1)
