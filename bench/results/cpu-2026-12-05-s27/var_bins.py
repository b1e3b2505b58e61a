import json, os, subprocess, sys, collections
reps=int(sys.argv[1]); size=sys.argv[2]; bins=sys.argv[3:]
args=['--threads','2','bench','--device','cpu','--size',size,'--runs','3','--profile','--json']
if size=='256': args+=['--channel-multiplier','1','--narrow','0.5']
mins={b:collections.defaultdict(lambda:1e9) for b in bins}; tot={b:[] for b in bins}
for r in range(reps):
    for b in bins:
        d=json.loads(subprocess.run([b]+args,capture_output=True,text=True,check=True).stdout)
        tot[b].append(d['median_ms'])
        for n in d['profile']['nodes']: mins[b][n['node']]=min(mins[b][n['node']],n['ms'])
for b in bins: print(b,'median-of-run min %.2f median %.2f sum-of-node-min %.2f'%(min(tot[b]),sorted(tot[b])[len(tot[b])//2],sum(mins[b].values())))
nodes=sorted(mins[bins[0]],key=lambda n:-abs(mins[bins[0]][n]-mins[bins[-1]][n]))
for n in nodes[:int(os.environ.get('TOP','15'))]: print('%-40s'%n+''.join('%10.3f'%mins[b][n] for b in bins))
