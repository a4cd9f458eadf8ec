#!/usr/bin/env bash
# Mutation testing over every strategy: runs `paraproof mutate` on one micro-model plan per strategy (dp,
# zero 1-3, tp, sp, pp 1F1B and GPipe, cp, ep/MoE, MLA, tied embeddings, dp x tp, dp x pp, and dp x pp x mb
# where both folds apply: dp=8 x mb=4 compact, dp=4 x mb=4 explicit), TOTAL mutants spread evenly, and sums
# the summary lines. Exit 1 when a mutant was missed, 2 when a run failed.
#   scripts/mutation_sweep.sh PARAPROOF TOTAL [SEED] [LOGDIR]
# MUTATE_ARGS adds options to every run (e.g. MUTATE_ARGS="--operators keep-old-state").
set -uo pipefail
bin=${1:?usage: mutation_sweep.sh PARAPROOF TOTAL [SEED] [LOGDIR]}
total=${2:?usage: mutation_sweep.sh PARAPROOF TOTAL [SEED] [LOGDIR]}
seed=${3:-1}
logdir=${4:-}
strategies=(
  "mlp dp=2"
  "llama-micro dp=2,zero=1"
  "llama-micro dp=2,zero=2"
  "llama-micro dp=2,zero=3"
  "llama-micro tp=2"
  "llama-micro tp=2,sp"
  "llama-micro pp=2,mb=2"
  "llama-micro pp=2,mb=2,schedule=gpipe"
  "llama-micro cp=2"
  "llama-micro dp=2,tp=2"
  "llama-micro dp=2,pp=2,mb=2"
  "gpt-micro pp=2,mb=2"
  "gpt-micro tp=2"
  "dsv3-micro dp=2,ep=2"
  "dsv3-micro tp=2"
  "dsv3-micro cp=2"
  "dsv3-micro dp=2,zero=1,ep=2"
  "dsv3-micro tp=2,sp"
  "llama-micro dp=8,pp=2,mb=4 --batch 32"
  "llama-micro dp=4,pp=2,mb=4 --batch 16 --explicit"
)
n=${#strategies[@]}
jobs=$(nproc 2>/dev/null || echo 2)
sum=(0 0 0 0 0)
status=0
rows=""  # every run's per-operator rows, summed at the end
for i in "${!strategies[@]}"; do
  read -r model par extra <<<"${strategies[$i]}"
  per=$(( total / n + (i < total % n ? 1 : 0) ))
  [ "$per" -gt 0 ] || continue
  # shellcheck disable=SC2086  # $extra: options of this strategy (--batch B, --explicit)
  out=$("$bin" mutate --model "$model" --parallel "$par" --seq 4 --count "$per" --seed $((seed + i)) --jobs "$jobs" ${extra:-} ${MUTATE_ARGS:-} 2>&1)
  rc=$?
  tag=${par//,/-}${extra:+-${extra//[ -]/}}
  [ -n "$logdir" ] && printf '%s\n' "$out" >"$logdir/$model-$tag.log"
  last=$(printf '%s\n' "$out" | tail -n 1)
  printf '%-14s %-30s %s\n' "$model" "$par${extra:+ $extra}" "$last"
  printf '%s\n' "$out" | grep -E 'MISSED|FALSE ALARM' || true
  if [ $rc -gt 1 ] || ! [[ $last =~ ^mutants:\ ([0-9]+)\ changed:\ ([0-9]+)\ caught:\ ([0-9]+)\ missed:\ ([0-9]+)\ invalid:\ ([0-9]+)$ ]]; then
    printf '%s\n' "$out" | tail -n 5
    status=2
    continue
  fi
  for k in 0 1 2 3 4; do sum[$k]=$(( sum[k] + BASH_REMATCH[k + 1] )); done
  rows+=$(printf '%s\n' "$out" | grep -E '^operator [a-z-]+ +[0-9]')$'\n'
  [ $rc -eq 1 ] && [ $status -eq 0 ] && status=1
done
# Per operator over every run: mutants changed caught missed invalid unchanged false-alarms undecided kill.
printf '%-22s %7s %7s %7s %7s %7s %9s %8s %9s %5s\n' operator mutants changed caught missed invalid unchanged \
  f-alarms undecided kill
printf '%s' "$rows" | awk '$1 == "operator" && NF >= 10 {
    for (k = 3; k <= 10; ++k) t[$2, k] += $k; seen[$2] = 1 }
  END { for (o in seen) printf "%-22s %7d %7d %7d %7d %7d %9d %8d %9d %5s\n", o, t[o,3], t[o,4], t[o,5], t[o,6],
          t[o,7], t[o,8], t[o,9], t[o,10], (t[o,4] ? sprintf("%.0f%%", 100 * t[o,5] / t[o,4]) : "-") }' | sort
echo "mutants: ${sum[0]} changed: ${sum[1]} caught: ${sum[2]} missed: ${sum[3]} invalid: ${sum[4]}"
exit $status
