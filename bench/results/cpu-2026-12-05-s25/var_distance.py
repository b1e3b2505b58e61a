#!/usr/bin/env python3
# Per-node minima of `gpen bench --profile` for binaries, alternating, each process classed by the
# distance of the two CPUs before and after it (build/core_distance, bench/core_distance.c): near
# (< 150 ns both), far (> 200 ns both), else dropped. Usage: var_distance.py ROUNDS BIN... (ARCH=r50|512, TOP=N)
import json, subprocess, sys, collections, os
rounds=int(sys.argv[1]); bins=sys.argv[2:]
args=['--threads','2','bench','--device','cpu','--size','256','--channel-multiplier','1','--narrow','0.5','--runs','3','--profile','--json']
if os.environ.get('ARCH')=='r50': args=['--threads','2','bench','--device','cpu','--arch','retinaface','-d','/work/main/build/peers_r50/r50.gpw','--image','/work/main/../shared/images/kids_1024x768.jpg','--runs','3','--profile','--json']
if os.environ.get('ARCH')=='512': args=['--threads','2','bench','--device','cpu','--size','512','--runs','2','--profile','--json']
def pp(): return float(subprocess.run(['build/core_distance'],capture_output=True,text=True).stdout.split()[0])
mins=collections.defaultdict(lambda: collections.defaultdict(lambda:1e9)); cnt=collections.Counter(); tot=collections.defaultdict(list)
for r in range(rounds):
    for b in bins:
        a=pp(); d=json.loads(subprocess.run([b]+args,capture_output=True,text=True,check=True).stdout); c=pp()
        mode='near' if a<150 and c<150 else 'far' if a>200 and c>200 else None
        if not mode: continue
        k=(os.path.basename(b),mode); cnt[k]+=1; tot[k].append(d['profile']['total_ms'])
        for n in d['profile']['nodes']: mins[k][n['node']]=min(mins[k][n['node']],n['ms'])
keys=sorted(mins)
for k in keys: print(k,'n',cnt[k],'sum-of-node-min %.2f total-min %.2f'%(sum(mins[k].values()),min(tot[k])))
ref=keys[0]; nodes=sorted(mins[ref],key=lambda n:-mins[ref][n])
print('%-28s'%'node'+''.join('%14s'%('%s/%s'%(k[0][-1],k[1])) for k in keys))
for n in nodes[:int(os.environ.get('TOP','30'))]:
    print('%-28s'%n+''.join('%14.3f'%mins[k][n] for k in keys))
