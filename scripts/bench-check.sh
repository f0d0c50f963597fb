#!/usr/bin/env bash
# End-to-end speed of `splitbrain check` on long generated histories: for
# 100 k and 1 M operations, valid and with one violation near the end, it
# writes the run folders with histgen (once; the same seed writes the same
# bytes), then times `splitbrain check` on each with /usr/bin/time -v and
# prints wall time, CPU time (user + system), peak RSS, exit code and the
# size of result.json and report.html.
# See BENCHMARKS.md.
#
#   scripts/bench-check.sh [WORKDIR] [SPLITBRAIN_BINARY]
set -euo pipefail
work=${1:-/tmp/splitbrain-bench-check}
bin=${2:-}
repo=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$work"
if [ -z "$bin" ]; then
	bin=$work/splitbrain
	(cd "$repo" && go build -o "$bin" ./cmd/splitbrain)
fi
(cd "$repo" && go build -o "$work/histgen" ./cmd/histgen)

printf '%-20s %8s %7s %10s %5s %12s %12s\n' history wall cpu max-rss exit result.json report.html
for ops in 100000 1000000; do
	for variant in valid violation; do
		dir=$work/h$ops-$variant
		if [ ! -f "$dir/history.jsonl" ]; then
			flag=
			[ "$variant" = violation ] && flag=--violation
			"$work/histgen" --ops "$ops" --seed 1 $flag "$dir"
			cp "$dir/result.json" "$dir/result.json.generated"
		fi
		# Every measurement starts from the folder histgen wrote.
		cp "$dir/result.json.generated" "$dir/result.json"
		rm -f "$dir/report.html" "$dir/porcupine.html"
		set +e
		/usr/bin/time -v -o "$dir/time.txt" "$bin" check "$dir" >"$dir/check.out" 2>&1
		code=$?
		set -e
		wall=$(sed -n 's/.*Elapsed (wall clock) time (h:mm:ss or m:ss): //p' "$dir/time.txt")
		rss=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$dir/time.txt")
		user=$(sed -n 's/.*User time (seconds): //p' "$dir/time.txt")
		sys=$(sed -n 's/.*System time (seconds): //p' "$dir/time.txt")
		cpu=$(echo "$user + $sys" | bc)
		size=$(stat -c %s "$dir/result.json")
		report=$(stat -c %s "$dir/report.html")
		printf '%-20s %8s %7s %6d MiB %5d %12d %12d\n' "$ops-$variant" "$wall" "$cpu" $((rss / 1024)) "$code" "$size" "$report"
	done
done
