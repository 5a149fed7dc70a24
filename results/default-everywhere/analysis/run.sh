#!/bin/bash
# usage: run.sh BIN LABEL LINK [budget]   (LINK: preset name or trace:NAME)
# Writes OUT/LABEL.toml, runs `salsify sim` on it, appends the command to OUT/commands.log
# and the summary row to OUT/rows.md. VIDEO (default synthetic) and SCHEME override.
BIN=$1; LABEL=$2; LINK=$3; BUDGET=$4
mkdir -p ${OUT:-out}; cfg=${OUT:-out}/$LABEL.toml
{
[ -n "$SCHEME" ] && echo "scheme = \"$SCHEME\""
echo "video = \"${VIDEO:-synthetic}\""
echo 'size = "640x360"'
echo 'fps = 30'
echo 'duration_s = 60'
echo 'seed = 1'
echo '[link]'
case $LINK in
  trace:*) echo "trace = \"/work/shared/traces/${LINK#trace:}\"";;
  *) echo "preset = \"$LINK\"";;
esac
echo 'queue_packets = 256'
echo 'delay_ms = 20'
if [ -n "$BUDGET" ]; then echo '[salsify]'; echo "budget = \"$BUDGET\""; fi
} > $cfg
echo "$BIN sim --config $cfg --out ${OUT:-out}/$LABEL -q --row $LABEL" >> ${OUT:-out}/commands.log
$BIN sim --config $cfg --out ${OUT:-out}/$LABEL -q --row $LABEL 2>&1 | grep '^| ' >> ${OUT:-out}/rows.md
