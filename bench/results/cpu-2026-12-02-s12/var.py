#!/usr/bin/env python3
# per-node minima of gpen bench --profile under env variants, round-robin
# usage: var.py REPS SIZE label:K=V,K=V ...   (label:- for no env)
import json, os, subprocess, sys, collections
reps=int(sys.argv[1]); size=sys.argv[2]; vs=[]
for a in sys.argv[3:]:
    lab,e=a.split(':',1); env={}
    if e!='-':
        for kv in e.split(','): k,v=kv.split('=',1); env[k]=v
    vs.append((lab,env))
args=['build/gpen','--threads','2','bench','--device','cpu','--size',size,'--runs','3','--profile','--json']
if size=='256': args+=['--channel-multiplier','1','--narrow','0.5']
mins={l:collections.defaultdict(lambda:1e9) for l,_ in vs}; tot={l:[] for l,_ in vs}
for r in range(reps):
    for lab,env in vs:
        e=dict(os.environ); e.update(env)
        b_=[e.pop('BIN')] if 'BIN' in e else args[:1]
        d=json.loads(subprocess.run(b_+args[1:],env=e,capture_output=True,text=True,check=True).stdout)
        tot[lab].append(d['profile']['total_ms'])
        for n in d['profile']['nodes']:
            mins[lab][n['node']]=min(mins[lab][n['node']],n['ms'])
b=vs[0][0]
for l,_ in vs: print(l,'total min %.2f sum-of-node-min %.2f'%(min(tot[l]),sum(mins[l].values())))
nodes=sorted(mins[b],key=lambda n:-mins[b][n])
print('%-28s'%'node'+''.join('%12s'%l for l,_ in vs))
for n in nodes[:int(os.environ.get('TOP','30'))]:
    print('%-28s'%n+''.join('%12.3f'%mins[l][n] for l,_ in vs))
