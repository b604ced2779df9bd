#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# scripts/hostile-table.sh OUT: the cases of a client_hostile.sh run (its output, e.g. a kept
# Documentation/debug-runs/KEY/client_hostile.sh.out) as a Markdown table: what the first read
# got, the whole file after, the counters each case moved, and the log lines it caused.
echo "| case | first read | then | backchannel | versions counters | log lines, e.g. |"
echo "| --- | --- | --- | --- | --- | --- |"
grep '^# case ' "$1" | sed 's/^# case //' | while IFS= read -r l; do
	name=${l%%:*} rest=${l#*: }
	fr=$(sed -n 's/.*first read: \([^;]*\);.*/\1/p' <<<"$rest")
	th=$(sed -n 's/.*; then: \([^;]*\);.*/\1/p' <<<"$rest")
	bc=$(sed -n 's/.*; backchannel: \([^;]*\);.*/\1/p' <<<"$rest")
	ve=$(sed -n 's/.*; versions: \([^;]*\);.*/\1/p' <<<"$rest")
	lg=$(sed -n 's/.*; \([0-9]* log lines\); e.g.: *\(.*\)$/\1: \2/p' <<<"$rest" | cut -c1-140)
	echo "| $name | $fr | $th | $bc | $ve | ${lg//|/\\|} |"
done
