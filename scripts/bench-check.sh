#!/usr/bin/env bash
# End-to-end speed of `splitbrain check` on long generated histories. It
# writes the run folders with histgen (once; the same flags write the same
# bytes), then times `splitbrain check` on each with /usr/bin/time -v and
# prints wall time, CPU time (user + system), peak RSS, exit code and the
# size of result.json and report.html. The histories: 100 k and 1 M
# operations by 8 clients on one lock, valid and with one violation near
# the end; and 1 M valid operations at each shape of 1, 4 and 16 keys by
# 8 and 32 clients. See BENCHMARKS.md.
#
#   scripts/bench-check.sh [WORKDIR] [SPLITBRAIN_BINARY]
#
# SHAPES="KEYSxCLIENTS ..." (such as SHAPES="4x8") measures only those
# shapes, at 1 M operations.
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

# name ops keys clients violation
runs=()
if [ -z "${SHAPES:-}" ]; then
	for ops in 100000 1000000; do
		runs+=("$ops-valid $ops 1 8 no" "$ops-violation $ops 1 8 yes")
	done
	SHAPES="1x8 1x32 4x8 4x32 16x8 16x32"
fi
for s in $SHAPES; do
	runs+=("1M-k${s%x*}-c${s#*x} 1000000 ${s%x*} ${s#*x} no")
done

printf '%-20s %8s %7s %10s %5s %12s %12s\n' history wall cpu max-rss exit result.json report.html
for r in "${runs[@]}"; do
	read -r name ops keys clients violation <<<"$r"
	dir=$work/h-$name
	if [ ! -f "$dir/history.jsonl" ]; then
		flag=
		[ "$violation" = yes ] && flag=--violation
		"$work/histgen" --ops "$ops" --keys "$keys" --clients "$clients" --seed 1 $flag "$dir"
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
	printf '%-20s %8s %7s %6d MiB %5d %12d %12d\n' "$name" "$wall" "$cpu" $((rss / 1024)) "$code" "$size" "$report"
done
