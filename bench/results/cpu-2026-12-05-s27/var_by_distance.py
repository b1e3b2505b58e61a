#!/usr/bin/env python3
# Per-node times of `gpen bench --profile` for binaries, alternating, each process classed near or
# far by the engine's own probe (cores.far_runs of its JSON: no run far, or every run far; others
# dropped). Run from the repository root.
#   var_by_distance.py N BIN...            N rounds over the binaries, both classes kept
#   WAIT=far|near var_by_distance.py N BIN...
#                                          start a process only while build/core_distance reads that
#                                          class, keep it only if the probe and a second reading
#                                          agree, until N kept per binary or TMAX seconds (600)
# STAT=min (default) or median per node; ARCH=512 for GPEN-512; TOP=N rows.
import collections, json, os, subprocess, sys, time
n_want = int(sys.argv[1]); bins = sys.argv[2:]
wait = os.environ.get('WAIT'); tmax = float(os.environ.get('TMAX', '600')); stat = os.environ.get('STAT', 'min')
args = ['--threads', '2', 'bench', '--device', 'cpu', '--size', '256', '--channel-multiplier', '1', '--narrow', '0.5',
        '--runs', '3', '--profile', '--json']
if os.environ.get('ARCH') == '512':
    args = ['--threads', '2', 'bench', '--device', 'cpu', '--size', '512', '--runs', '2', '--profile', '--json']
def far_now(): return float(subprocess.run(['build/core_distance'], capture_output=True, text=True).stdout.split()[0]) > 200
times = collections.defaultdict(lambda: collections.defaultdict(list)); cnt = collections.Counter(); tot = collections.defaultdict(list)
def run(b):
    d = json.loads(subprocess.run([b] + args, capture_output=True, text=True, check=True).stdout)
    fr, n = d['cores']['far_runs'], d['runs']
    return d, 'near' if fr == 0 else 'far' if fr == n else None
def keep(b, mode, d):
    k = (b, mode); cnt[k] += 1; tot[k].append(d['median_ms'])
    for x in d['profile']['nodes']: times[k][x['node']].append(x['ms'])
if not wait:
    for r in range(n_want):
        for b in bins:
            d, mode = run(b)
            if mode: keep(b, mode, d)
else:
    t0 = time.time(); i = 0
    while time.time() - t0 < tmax and min(cnt[(b, wait)] for b in bins) < n_want:
        if far_now() != (wait == 'far'): time.sleep(1); continue
        b = bins[i % len(bins)]
        d, mode = run(b)
        if mode != wait or far_now() != (wait == 'far'): continue
        i += 1; keep(b, mode, d)
pick = min if stat == 'min' else (lambda v: sorted(v)[len(v) // 2])
per = {k: {n: pick(v) for n, v in d.items()} for k, d in times.items()}
keys = sorted(per)
for k in keys: print(k, 'n', cnt[k], 'sum-of-node-%s %.2f median-min %.2f' % (stat, sum(per[k].values()), min(tot[k])))
ref = keys[0]; nodes = sorted(per[ref], key=lambda n: -per[ref][n])
print('%-28s' % 'node' + ''.join('%14s' % ('%s/%s' % (os.path.basename(k[0])[-6:], k[1])) for k in keys))
for n in nodes[:int(os.environ.get('TOP', '30'))]:
    print('%-28s' % n + ''.join('%14.3f' % per[k][n] for k in keys))
