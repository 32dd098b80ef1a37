#!/bin/sh
# The placer's cost per job must not grow with the cluster: the median time
# of one decision on 20,000 GPUs (200,000 jobs) is compared with that on
# 2,000 GPUs (20,000 jobs). The indexes make a decision O(log G): about
# 1.3x from one size to the other; a decision that scans the GPUs, or the
# jobs placed so far, costs 10x. The bound, 4x, is one only such a
# regression crosses on a loaded machine: the median is untouched by the
# preempted decisions that a loaded machine adds to the tail.
#   scale-check.sh BENCH
set -eu
bench=$1
small=$("$bench" --gpus 2000 --jobs 20000 --placement-only) || { echo "small run exited $?"; exit 1; }
large=$("$bench" --gpus 20000 --jobs 200000 --placement-only) || { echo "large run exited $?"; exit 1; }
echo "$small"
echo "$large"
p50() { echo "$1" | sed -n 's/.*"placement_p50_ns":\([0-9.e+]*\).*/\1/p'; }
awk -v small="$(p50 "$small")" -v large="$(p50 "$large")" 'BEGIN {
  if (small == "" || large == "" || small <= 0) { print "no placement_p50_ns in the records"; exit 1 }
  ratio = large / small
  printf "median decision: %.0f ns on 2,000 GPUs, %.0f ns on 20,000 GPUs: %.2fx (bound 4x)\n", small, large, ratio
  exit ratio <= 4 ? 0 : 1
}'
