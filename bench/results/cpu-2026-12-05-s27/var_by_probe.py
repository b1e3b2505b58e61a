#!/usr/bin/env python3
# per-node minima by the engine's own core-distance probe (cores.far_runs of gpen bench --json)
import json, subprocess, sys, collections, os
rounds=int(sys.argv[1]); bins=sys.argv[2:]
args=['--threads','2','bench','--device','cpu','--size','256','--channel-multiplier','1','--narrow','0.5','--runs','3','--profile','--json']
if os.environ.get('ARCH')=='512': args=['--threads','2','bench','--device','cpu','--size','512','--runs','2','--profile','--json']
mins=collections.defaultdict(lambda: collections.defaultdict(lambda:1e9)); cnt=collections.Counter(); tot=collections.defaultdict(list)
for r in range(rounds):
    for b in bins:
        d=json.loads(subprocess.run([b]+args,capture_output=True,text=True,check=True).stdout)
        fr=d['cores']['far_runs']; n=d['runs']
        mode='near' if fr==0 else 'far' if fr==n else None
        if not mode: continue
        k=(b,mode); cnt[k]+=1; tot[k].append(d['median_ms'])
        for x in d['profile']['nodes']: mins[k][x['node']]=min(mins[k][x['node']],x['ms'])
keys=sorted(mins)
for k in keys: print(k,'n',cnt[k],'sum-of-node-min %.2f median-min %.2f'%(sum(mins[k].values()),min(tot[k])))
ref=keys[0]; nodes=sorted(mins[ref],key=lambda n:-mins[ref][n])
print('%-28s'%'node'+''.join('%14s'%('%s/%s'%(os.path.basename(k[0])[-6:],k[1])) for k in keys))
for n in nodes[:int(os.environ.get('TOP','30'))]:
    print('%-28s'%n+''.join('%14.3f'%mins[k][n] for k in keys))
