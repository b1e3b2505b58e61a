#!/usr/bin/env python3
# like var_far.py, but only runs while build/core_distance says far; stops after N far pairs or T seconds
import json, subprocess, sys, collections, os, time
want=int(sys.argv[1]); tmax=float(sys.argv[2]); bins=sys.argv[3:]
args=['--threads','2','bench','--device','cpu','--size','256','--channel-multiplier','1','--narrow','0.5','--runs','3','--profile','--json']
if os.environ.get('ARCH')=='512': args=['--threads','2','bench','--device','cpu','--size','512','--runs','2','--profile','--json']
mode_want=os.environ.get('MODE','far')
def pp(): return float(subprocess.run(['build/core_distance'],capture_output=True,text=True).stdout.split()[0])
mins=collections.defaultdict(lambda: collections.defaultdict(list)); cnt=collections.Counter(); tot=collections.defaultdict(list)
t0=time.time(); i=0
while time.time()-t0<tmax and min([cnt[(b,mode_want)] for b in bins])<want:
    d0=pp()
    if (mode_want=='far') != (d0>200): time.sleep(1); continue
    b=bins[i%len(bins)]
    d=json.loads(subprocess.run([b]+args,capture_output=True,text=True,check=True).stdout)
    fr=d['cores']['far_runs']; n=d['runs']
    mode='near' if fr==0 else 'far' if fr==n else None
    d1=pp()
    if mode!=mode_want or (mode_want=='far') != (d1>200): continue
    i+=1
    k=(b,mode); cnt[k]+=1; tot[k].append(d['median_ms'])
    for x in d['profile']['nodes']: mins[k][x['node']].append(x['ms'])
med=lambda v: sorted(v)[len(v)//2]
mins={k:{n:med(v) for n,v in d.items()} for k,d in mins.items()}
keys=sorted(mins)
for k in keys: print(k,'n',cnt[k],'sum-of-node-min %.2f median-min %.2f'%(sum(mins[k].values()),min(tot[k])))
ref=keys[0]; nodes=sorted(mins[ref],key=lambda n:-mins[ref][n])
print('%-28s'%'node'+''.join('%14s'%('%s/%s'%(os.path.basename(k[0])[-6:],k[1])) for k in keys))
for n in nodes[:int(os.environ.get('TOP','30'))]:
    print('%-28s'%n+''.join('%14.3f'%mins[k][n] for k in keys))
