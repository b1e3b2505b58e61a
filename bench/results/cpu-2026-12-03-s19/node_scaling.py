#!/usr/bin/env python3
# Per-node minima of GPEN-256 profiles at 1 and 2 threads, and each node's parallel efficiency
# (t1 / 2 t2) and loss (t2 - t1 / 2): is time lost to the second thread anywhere?
# usage: node_scaling.py REPS   (REPS alternating invocations of each thread count)
import collections, json, subprocess, sys
reps = int(sys.argv[1]) if len(sys.argv) > 1 else 2
args = ['build/gpen', 'bench', '--size', '256', '--channel-multiplier', '1', '--narrow', '0.5', '--profile',
        '--runs', '10', '--json']
mins = {1: collections.defaultdict(lambda: 1e9), 2: collections.defaultdict(lambda: 1e9)}
med = {1: [], 2: []}
for _ in range(reps):
    for t in (1, 2):
        d = json.loads(subprocess.run(args[:1] + ['--threads', str(t)] + args[1:], capture_output=True, text=True,
                                      check=True, env={'GOMP_SPINCOUNT': '1000', 'PATH': '/usr/bin:/bin'}).stdout)
        med[t].append(d['median_ms'])
        for n in d['profile']['nodes']:
            mins[t][n['node']] = min(mins[t][n['node']], n['ms'])
a, b = mins[1], mins[2]
print('whole-graph medians: 1 thread', med[1], '2 threads', med[2])
print('sum of node minima: 1 thread %.1f ms, 2 threads %.1f ms' % (sum(a.values()), sum(b.values())))
for k in sorted(a, key=lambda k: -(b[k] - a[k] / 2))[:20]:
    print('%-30s 1t %7.3f 2t %7.3f  eff %.2f  loss %.3f' % (k, a[k], b[k], a[k] / 2 / b[k], b[k] - a[k] / 2))
print('total loss %.2f ms' % sum(b[k] - a[k] / 2 for k in a))
