#!/usr/bin/env bash
# Runs on a GPU machine with Nsight Compute, from the repository root: gives every warp-access
# and bank diagram that claims measured counters its counters, then lists each diagram's
# prediction beside them.
#
#   scripts/gpu-diagrams.sh                 # kernelbook profile, then kernelbook diagrams --check
#   LABS="drill_coalesce transpose" scripts/gpu-diagrams.sh     # some of the labs only
#   RECORD=1 scripts/gpu-diagrams.sh        # record the labs afresh instead (timings too)
#
# `kernelbook profile LAB` adds Nsight Compute's counters to labs/recorded/GPU/LAB.json (GPU:
# the folder the chapters show, book.toml's recorded-gpu) without
# timing the lab again (so the figures the chapters quote from the recordings stay true); it
# refuses a recording whose kernels were edited since, and then RECORD=1 is the way. The binary is
# built elsewhere and carried in: KERNELBOOK (default target/release/kernelbook). OUT receives
# diagrams.txt (every diagram: model, counters, agreement), profile.txt (the log) and
# recorded.tgz (the recordings of the labs profiled).
set -uo pipefail
KERNELBOOK=${KERNELBOOK:-target/release/kernelbook}
OUT=${OUT:-/tmp/kernelbook-diagrams}
# The labs the diagrams take counters from, besides Lab 3 (recorded with them already); the
# strided sweep last: it profiles one kernel seven times, each run over a 4 GiB input.
LABS=${LABS:-drill_coalesce drill_bank_conflict transpose strided}
mkdir -p "$OUT"
export KERNELBOOK_REPO=$PWD
SHOWN=$(sed -n 's/^recorded-gpu = "\(.*\)"$/\1/p' book.toml)

{
    echo "== device"
    nvidia-smi --query-gpu=name,driver_version --format=csv 2>&1
    command -v ncu || ls -l /usr/local/cuda/bin/ncu 2>&1
    "$KERNELBOOK" info 2>&1
} | tee "$OUT/profile.txt"

status=0
for lab in $LABS; do
    echo "== $lab" | tee -a "$OUT/profile.txt"
    start=$(date +%s)
    if [ "${RECORD:-}" = 1 ]; then
        "$KERNELBOOK" record "$lab" --folder "$SHOWN" 2>&1 | tee -a "$OUT/profile.txt"
    else
        "$KERNELBOOK" profile "$lab" 2>&1 | tee -a "$OUT/profile.txt"
    fi
    [ "${PIPESTATUS[0]}" = 0 ] || status=1
    echo "$lab: $(( $(date +%s) - start )) s" | tee -a "$OUT/profile.txt"
done

echo "== diagrams" | tee -a "$OUT/profile.txt"
"$KERNELBOOK" diagrams --check > "$OUT/diagrams.txt" 2>&1 || status=1
cat "$OUT/diagrams.txt"
files=()
for lab in $LABS profile_transpose; do
    [ -f "labs/recorded/$SHOWN/$lab.json" ] && files+=("labs/recorded/$SHOWN/$lab.json")
done
tar czf "$OUT/recorded.tgz" "${files[@]}"
exit $status
