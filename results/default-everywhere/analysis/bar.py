#!/usr/bin/env python3
"""The issue's bar from rows.md: prefix_ew / prefix_fc / prefix_NEW per link."""
import sys
rows = {}
for l in open('rows.md'):
    p = [x.strip() for x in l.strip().strip('|').split('|')]
    if len(p) >= 6:
        rows[p[0]] = dict(ssim=float(p[2]), mean=float(p[3]), p95=float(p[4]), fps=float(p[5]))
pre, new = sys.argv[1], sys.argv[2]
links = sys.argv[3:]
fmt = lambda r: f"{r['ssim']:.2f}, {r['mean']:.0f} / {r['p95']:.0f}, {r['fps']:.1f}"
print('| link | EWMA | forecast (today) | new default | mean, p95 vs better | SSIM vs better | frames vs EWMA | bar |')
print('|---|---|---|---|---|---|---|---|')
for n in links:
    e, f, d = rows.get(f'{pre}ew_{n}'), rows.get(f'{pre}fc_{n}'), rows.get(f'{pre}{new}_{n}')
    if not (e and f and d):
        print(f'| {n} | missing |'); continue
    bm, bp, bs = min(e['mean'], f['mean']), min(e['p95'], f['p95']), max(e['ssim'], f['ssim'])
    rm, rp, ds, rf = d['mean'] / bm, d['p95'] / bp, d['ssim'] - bs, d['fps'] / e['fps']
    fails = [x for x, bad in [('mean', rm > 1.05), ('p95', rp > 1.05), ('SSIM', ds < -0.3), ('frames', rf < 0.95)] if bad]
    print(f"| {n} | {fmt(e)} | {fmt(f)} | {fmt(d)} | {rm:.2f}, {rp:.2f} | {ds:+.2f} dB | {rf:.2f} | {'met' if not fails else 'not met: ' + ', '.join(fails)} |")
