#!/usr/bin/env python3
"""Per-window time series of one or more sim outputs: link opportunities (kb/s), frames
shown, bytes sent, mean delay, and (DIAG runs) the forecast's and the EWMA's deliverable
fragments within d.  usage: series.py WINDOW_MS T0_S T1_S DIR[:diaglog] ..."""
import sys, csv, collections
w = float(sys.argv[1]); t0 = float(sys.argv[2]) * 1000; t1 = float(sys.argv[3]) * 1000
def load(spec):
    d, _, diag = spec.partition(':')
    opp = collections.Counter(); shown = collections.Counter(); byts = collections.Counter()
    dl = collections.defaultdict(list); fc = collections.defaultdict(list); ew = collections.defaultdict(list)
    for line in open(d + '/packets.log'):
        p = line.split()
        if len(p) >= 3 and p[1] == '#':
            opp[int(float(p[0]) // w)] += int(p[2])
    for r in csv.DictReader(open(d + '/frames.csv')):
        k = int(float(r['capture_ms']) // w)
        if r['display_ms']: shown[k] += 1
        byts[k] += int(r['bytes'] or 0)
        if r['delay_ms']: dl[k].append(float(r['delay_ms']))
    if diag:
        for line in open(diag):
            if line.startswith('DIAG'):
                p = line.split(); k = int(int(p[1]) / 1000 // w)
                fc[k].append(float(p[2])); ew[k].append(float(p[3]))
    return opp, shown, byts, dl, fc, ew
runs = [load(s) for s in sys.argv[4:]]
print('t_s', *[f'| link_kbps shown kB delay F E' for _ in runs])
mean = lambda x: sum(x) / len(x) if x else float('nan')
for k in range(int(t0 // w), int(t1 // w)):
    row = [f'{k * w / 1000:6.2f}']
    for opp, shown, byts, dl, fc, ew in runs:
        row.append(f'| {opp[k] * 8 / w:6.0f} {shown[k]:3d} {byts[k] / 1000:6.1f} {mean(dl[k]):6.0f} {mean(fc[k]):6.1f} {mean(ew[k]):6.1f}')
    print(*row)
