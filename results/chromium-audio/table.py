import json,sys,re,os
rows=[]
for name in sys.argv[1:]:
    if name.startswith('salsify'):
        m=json.load(open(f'{name}/marks/audio_marks.json'))
        out=open(f'{name}.stdout').read()
        inner=re.search(r'mouth-to-ear delay mean ([\d.]+) ms, p95 ([\d.]+) ms \| concealed ([\d.]+)%',out)
        vid=re.search(r'mean ([\d.]+) ms, p95 ([\d.]+) ms',out)
        skew=re.search(r'window: ([\d.]+)%',out)
        own=f"{inner.group(1)} / {inner.group(2)}; concealed {inner.group(3)} %; A/V in window {skew.group(1)} %"
        video=f"{float(vid.group(1)):.0f} / {float(vid.group(2)):.0f}"
    else:
        m=json.load(open(f'{name}/audio_marks.json'))
        s=json.load(open(f'{name}/summary.json'))
        own=f"concealed {m['receiver_reported_concealed_fraction']*100:.2f} % (getStats)"
        video=f"{s['delay_mean_ms']:.0f} / {s['delay_p95_ms']:.0f}"
    f=lambda v: f"{v:.1f}"
    print(f"| {name} | {f(m['audio_delay_mean_ms'])} / {f(m['audio_delay_p95_ms'])} | {m['audio_marks_heard']} / {m['audio_marks_expected']} | {own} | {video} |")
