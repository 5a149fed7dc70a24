#!/bin/bash
S=./salsify-bin; T=/work/shared/traces/Verizon-LTE-short
run() { name=$1; shift; echo "$name $(date -u +%T) load $(cat /proc/loadavg)" >> loads.txt; "$@" > $name.stdout 2> $name.stderr; echo "$name exit $? $(date -u +%T)" >> loads.txt; }
run av1-2 $S peer chromium --audio synthetic --codec av1 --duration 30 --trace $T --out av1-2
run vp8-nolink $S peer chromium --audio synthetic --duration 20 --link none --out vp8-nolink
run salsify-nolink $S demo --link none --duration 20 --out salsify-nolink
$S audio-marks salsify-nolink/audio.wav --delay salsify-nolink/audio.csv --out salsify-nolink/marks > salsify-nolink.marks 2>&1
echo all-done-3 >> loads.txt
