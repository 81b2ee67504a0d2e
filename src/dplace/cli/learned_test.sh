#!/usr/bin/env bash
# End-to-end tests of the learned placers: dplace gen, dplace train (and under mpirun -n 2, which
# must train the same weights), placing with the trained policy, bad policy files, and the bundled
# policy's training graphs kept apart from the learned suite's test graphs.
set -u
source "$(dirname "$0")/test_lib.sh"

# What several sections start from: three generated graphs and a policy trained on them (with its
# checkpoint), made once per run of the script.
train=(train --graphs "$TMP/g" --cluster k80x4 --updates 2 --episodes 3 --max-units 48)
place=(place --graph "$TMP/g/enas_cnn_3_1.json" --cluster k80x4 --placer placeto --evaluations 64)
graphs() {
  [[ -d $TMP/g ]] || "$DPLACE" gen enas_cnn --count 3 --seed 3 --out "$TMP/g" --quiet
}
trained() {
  graphs
  [[ -f $TMP/one.pt ]] || "$DPLACE" "${train[@]}" --seed 7 --out "$TMP/one.pt" \
    --checkpoint "$TMP/one.ckpt" --quiet || fail "train: the policy the section needs"
}
# Distributed: two ranks, the same weights, optimiser state and baselines bit for bit: every
# tensor of the two checkpoints, read with PyTorch (the files' bytes differ: LibTorch names Adam's
# state by memory address).
same_tensors() {
  /usr/bin/python3 -c "
import sys, torch
a, b = (list(torch.jit.load(p).state_dict().values()) for p in sys.argv[1:3])
sys.exit(0 if len(a) == len(b) > 20 and all(torch.equal(x, y) for x, y in zip(a, b)) else 1)" "$1" "$2"
}

# gen: deterministic per seed, one file per graph.
section_gen() {
"$DPLACE" gen enas_cnn --count 3 --seed 3 --out "$TMP/gen" --quiet && ok || fail "gen"
"$DPLACE" gen enas_cnn --count 3 --seed 3 --out "$TMP/g2" --quiet
[[ $(ls "$TMP/gen" | wc -l) == 3 ]] && ok || fail "gen: want 3 files"
diff -r "$TMP/gen" "$TMP/g2" >/dev/null && ok || fail "gen: same seed, different graphs"
"$DPLACE" gen enas_cnn --count 1 --seed 4 --out "$TMP/g4" --quiet
cmp -s "$TMP/gen/enas_cnn_3_0.json" "$TMP/g4/enas_cnn_4_0.json" && fail "gen: seed ignored" || ok
expect_bad_input gen_family "unknown graph family 'enas'" gen enas --out "$TMP/x"
}

# train: policy, learning curve, progress on stderr.
section_train() {
graphs
if "$DPLACE" "${train[@]}" --seed 7 --out "$TMP/one.pt" --checkpoint "$TMP/one.ckpt" --log "$TMP/curve.csv" \
    >"$TMP/train.out" 2>"$TMP/train.err"; then
  ok
  [[ $(wc -l <"$TMP/curve.csv") == 3 ]] && ok || fail "train: curve rows $(cat "$TMP/curve.csv")"
  grep -q "^update 2  episodes 6" "$TMP/train.err" && ok || fail "train: progress $(cat "$TMP/train.err")"
  grep -q "2 updates, 6 episodes" "$TMP/train.out" && ok || fail "train: summary $(cat "$TMP/train.out")"
else
  fail "train: $(cat "$TMP/train.err")"
fi
expect_bad_input train_method "--method: dqn not in {placeto,colocrl,hdp,gdp}" "${train[@]}" \
  --method dqn --out "$TMP/p.pt"
expect_bad_input train_no_cluster "--cluster" train --graphs "$TMP/g" --out "$TMP/p.pt"
expect_bad_input train_algorithm "--algorithm: 'a2c' is not reinforce or ppo" "${train[@]}" \
  --algorithm a2c --out "$TMP/p.pt"
expect_bad_input train_no_graphs "--graphs nowhere: neither a file, a folder nor a suite" \
  train --graphs nowhere --cluster k80x4 --out "$TMP/p.pt"
expect_bad_input train_resume "c.pt: no such checkpoint" "${train[@]}" --seed 7 --out "$TMP/p.pt" \
  --resume "$TMP/c.pt"
# Hyper-parameters not given are the method's, as its placer's (learn::kMethods).
"$DPLACE" "${train[@]}" --method gdp --out "$TMP/defaults.pt" >"$TMP/defaults.out" 2>/dev/null &&
  grep -q "trained gdp (hidden 64, ppo, lr 0.0001)" "$TMP/defaults.out" && ok ||
  fail "train --method gdp without --hidden: $(cat "$TMP/defaults.out")"
"$DPLACE" "${train[@]}" --method gdp --hidden 8 --algorithm reinforce --lr 0.01 \
  --out "$TMP/defaults.pt" >"$TMP/defaults.out" 2>/dev/null &&
  grep -q "trained gdp (hidden 8, reinforce, lr 0.01)" "$TMP/defaults.out" && ok ||
  fail "train --method gdp --hidden 8: $(cat "$TMP/defaults.out")"
}

# mpirun -n 2 trains what one process trains, for every method and algorithm; a rank that fails
# ends the job.
section_mpi() {
trained
if command -v mpirun >/dev/null; then
  mpirun --allow-run-as-root --oversubscribe -n 2 "$DPLACE" "${train[@]}" --seed 7 --out "$TMP/mpi.pt" \
    --checkpoint "$TMP/mpi.ckpt" \
    >"$TMP/mpi.out" 2>"$TMP/mpi.err" && ok || fail "mpirun: $(cat "$TMP/mpi.err")"
  grep -q "on 2 ranks" "$TMP/mpi.out" && ok || fail "mpirun: not 2 ranks: $(cat "$TMP/mpi.out")"
  same_tensors "$TMP/one.ckpt" "$TMP/mpi.ckpt" && ok || fail "mpirun -n 2: training differs from one process"
  "$DPLACE" "${train[@]}" --seed 8 --checkpoint "$TMP/other.ckpt" --quiet
  [[ -f $TMP/other.ckpt ]] && ok || fail "train --seed 8 wrote no checkpoint"
  same_tensors "$TMP/one.ckpt" "$TMP/other.ckpt" && fail "checkpoints of two seeds compare equal" || ok
  # PPO: four gradient steps per update, each gathered from both ranks.
  "$DPLACE" "${train[@]}" --seed 7 --algorithm ppo --checkpoint "$TMP/ppo.ckpt" --quiet &&
    mpirun --allow-run-as-root --oversubscribe -n 2 "$DPLACE" "${train[@]}" --seed 7 --algorithm ppo \
      --checkpoint "$TMP/ppo_mpi.ckpt" --quiet >"$TMP/ppo_mpi.err" 2>&1 && ok ||
    fail "train --algorithm ppo: $(cat "$TMP/ppo_mpi.err")"
  same_tensors "$TMP/ppo.ckpt" "$TMP/ppo_mpi.ckpt" && ok || fail "PPO under mpirun -n 2 differs from one process"
  same_tensors "$TMP/one.ckpt" "$TMP/ppo.ckpt" && fail "PPO and REINFORCE train the same weights" || ok
  # The whole-episode methods: hdp (its groups are drawn per episode) and gdp with PPO.
  for m in "hdp --hidden 16 --groups 32" "gdp --hidden 16 --algorithm ppo" "colocrl --hidden 16"; do
    read -r -a method <<<"$m"
    "$DPLACE" "${train[@]}" --seed 7 --method "${method[@]}" --checkpoint "$TMP/${method[0]}.ckpt" \
      --out "$TMP/${method[0]}.pt" --quiet &&
      mpirun --allow-run-as-root --oversubscribe -n 2 "$DPLACE" "${train[@]}" --seed 7 --method "${method[@]}" \
        --checkpoint "$TMP/${method[0]}_mpi.ckpt" --quiet >"$TMP/m_mpi.err" 2>&1 && ok ||
      fail "train --method ${method[0]}: $(cat "$TMP/m_mpi.err")"
    same_tensors "$TMP/${method[0]}.ckpt" "$TMP/${method[0]}_mpi.ckpt" && ok ||
      fail "${method[0]} under mpirun -n 2 differs from one process"
  done
  # A rank that cannot start, ranks given different training, a rank killed: the job ends within
  # a bounded time, with one line per rank that stopped.
  mpi=(timeout 60 mpirun --allow-run-as-root --oversubscribe)
  echo junk >"$TMP/junk.ckpt"
  "${mpi[@]}" -n 1 "$DPLACE" "${train[@]}" --out "$TMP/r.pt" : -n 1 "$DPLACE" "${train[@]}" \
    --out "$TMP/r.pt" --resume "$TMP/junk.ckpt" >/dev/null 2>"$TMP/r.err"
  rc=$?
  [[ $rc -eq 2 ]] && grep -q "^error: training stopped: rank 1 could not start" "$TMP/r.err" &&
    grep -q "^error: .*junk.ckpt: damaged checkpoint" "$TMP/r.err" && ok ||
    fail "one rank's bad --resume: exit $rc, $(cat "$TMP/r.err")"
  four=(train --graphs "$TMP/g" --cluster k80x4 --updates 2 --episodes 4 --max-units 48)
  "${mpi[@]}" -n 1 "$DPLACE" "${train[@]}" --out "$TMP/r.pt" : -n 1 "$DPLACE" "${four[@]}" \
    --out "$TMP/r.pt" >/dev/null 2>"$TMP/r.err"
  rc=$?
  [[ $rc -eq 2 ]] && grep -q "rank 1 has --episodes 4, rank 0 3 (every rank must" "$TMP/r.err" && ok ||
    fail "ranks with different --episodes: exit $rc, $(cat "$TMP/r.err")"
  # ... and every other option that changes what is learned: a learning rate, mixed starts, labels.
  for differ in "--lr 0.01" "--mixed-starts" "--perturb 3" "--imitate 40"; do
    # shellcheck disable=SC2086
    "${mpi[@]}" -n 1 "$DPLACE" "${train[@]}" --out "$TMP/r.pt" : -n 1 "$DPLACE" "${train[@]}" \
      --out "$TMP/r.pt" $differ >/dev/null 2>"$TMP/r.err"
    rc=$?
    [[ $rc -eq 2 ]] && grep -q "rank 1 has ${differ%% *}.*(every rank must" "$TMP/r.err" && ok ||
      fail "ranks with different $differ: exit $rc, $(cat "$TMP/r.err")"
  done
  # Each rank's clock ends a --seconds run at its own moment: they stop together.
  "${mpi[@]}" -n 2 "$DPLACE" train --graphs "$TMP/g" --cluster k80x4 --episodes 3 --max-units 48 \
    --seconds 2 --out "$TMP/r.pt" >/dev/null 2>"$TMP/r.err" && ok ||
    fail "mpirun --seconds 2: exit $?, $(tail -3 "$TMP/r.err")"
  "${mpi[@]}" -n 2 "$DPLACE" train --graphs "$TMP/g" --cluster k80x4 --episodes 3 --max-units 48 \
    --seconds 50 --out "$TMP/r.pt" >/dev/null 2>&1 &
  job=$!
  sleep 4
  pkill -9 -n -f "dplace train --graphs $TMP/g"
  killed=$SECONDS
  wait $job
  rc=$?
  [[ $rc -ne 0 && $rc -ne 124 && $((SECONDS - killed)) -le 20 ]] && ok ||
    fail "a killed rank: the job ended with $rc $((SECONDS - killed)) s after the kill"
else
  fail "mpirun not found (the set-up script installs openmpi-bin)"
fi
}

# place with the trained policy: same seed, same plan; bad and unreadable policy files; no output
# replaces an input policy or checkpoint.
section_policies() {
trained
"$DPLACE" "${place[@]}" --opt placeto.policy="$TMP/one.pt" --out "$TMP/a.json" >/dev/null 2>&1 && ok || fail "placeto"
"$DPLACE" "${place[@]}" --opt placeto.policy="$TMP/one.pt" --out "$TMP/b.json" >/dev/null 2>&1
cmp -s "$TMP/a.json" "$TMP/b.json" && ok || fail "placeto: same seed, different plans"
"$DPLACE" "${place[@]}" --out "$TMP/bundled.json" >/dev/null 2>&1 && ok || fail "placeto: bundled policy"

# Bad policy files: missing, truncated, not a policy.
head -c 2000 "$TMP/one.pt" >"$TMP/truncated.pt"
echo '{"format": "dplace-graph/1"}' >"$TMP/graph.pt"
expect_bad_input policy_missing "none.pt: no such policy file" "${place[@]}" --opt placeto.policy="$TMP/none.pt"
expect_bad_input policy_truncated "truncated.pt: damaged policy file" "${place[@]}" \
  --opt placeto.policy="$TMP/truncated.pt"
expect_bad_input policy_foreign "graph.pt: damaged policy file" "${place[@]}" --opt placeto.policy="$TMP/graph.pt"
expect_bad_input placeto_start "option placeto.start: 'best' is not search or fastest" "${place[@]}" \
  --opt placeto.start=best
# A policy or checkpoint that cannot be read (an I/O error) is one line on every surface.
for surface in placeto.policy mcmc.proposal local_search.proposal; do
  expect_bad_input "unreadable_$surface" "/proc/self/mem: cannot be read: read error" place --graph \
    "$TMP/g/enas_cnn_3_1.json" --cluster k80x4 --placer "${surface%%.*}" --opt "$surface=/proc/self/mem"
done
expect_bad_input unreadable_init "/proc/self/mem: cannot be read: read error" "${train[@]}" \
  --init /proc/self/mem --out "$TMP/x.pt"
expect_bad_input unreadable_resume "/proc/self/mem: cannot be read: read error" "${train[@]}" \
  --resume /proc/self/mem --out "$TMP/x.pt"
# No output replaces an input before training begins; the checkpoint resumed from may be replaced
# by the next one.
cp "$TMP/one.pt" "$TMP/init.pt"
cp "$TMP/one.ckpt" "$TMP/resume.ckpt"
expect_bad_input init_as_checkpoint "--checkpoint: $TMP/init.pt: is an input of this run" \
  "${train[@]}" --init "$TMP/init.pt" --checkpoint "$TMP/init.pt"
expect_bad_input init_as_log "--log: $TMP/init.pt: is an input of this run" "${train[@]}" \
  --init "$TMP/init.pt" --out "$TMP/x.pt" --log "$TMP/init.pt"
expect_bad_input resume_as_policy "--out: $TMP/resume.ckpt: is an input of this run" "${train[@]}" \
  --resume "$TMP/resume.ckpt" --out "$TMP/resume.ckpt"
expect_bad_input graph_as_policy "--out: $TMP/g/enas_cnn_3_1.json: is an input of this run" \
  "${train[@]}" --out "$TMP/g/enas_cnn_3_1.json"
cmp -s "$TMP/init.pt" "$TMP/one.pt" && cmp -s "$TMP/resume.ckpt" "$TMP/one.ckpt" && ok ||
  fail "an input policy or checkpoint was replaced"
"$DPLACE" train --graphs "$TMP/g" --cluster k80x4 --updates 3 --episodes 3 --max-units 48 --seed 7 \
  --resume "$TMP/resume.ckpt" --checkpoint "$TMP/resume.ckpt" --quiet && ! cmp -s "$TMP/resume.ckpt" \
  "$TMP/one.ckpt" && ok || fail "train --resume ck --checkpoint ck did not write the next checkpoint"
}

# The whole-episode placers: a trained policy, fresh weights, same seed same plan; a policy of
# another method is one line.
section_whole_episode() {
trained
if "$DPLACE" "${train[@]}" --seed 7 --method gdp --hidden 16 --algorithm ppo --out "$TMP/gdp.pt" \
    --quiet; then
  "$DPLACE" "${place[@]/placeto/gdp}" --opt gdp.policy="$TMP/gdp.pt" --opt gdp.fine_tune=true \
    --out "$TMP/gdp_a.json" >/dev/null 2>&1 && ok || fail "gdp with a trained policy"
  "$DPLACE" "${place[@]/placeto/gdp}" --opt gdp.policy="$TMP/gdp.pt" --opt gdp.fine_tune=true \
    --out "$TMP/gdp_b.json" >/dev/null 2>&1
  cmp -s "$TMP/gdp_a.json" "$TMP/gdp_b.json" && ok || fail "gdp: same seed, different plans"
  expect_bad_input policy_kind "one.pt: a placeto policy, not gdp" "${place[@]/placeto/gdp}" \
    --opt gdp.policy="$TMP/one.pt"
else
  fail "train --method gdp"
fi
for m in colocrl hdp; do
  "$DPLACE" "${place[@]/placeto/$m}" --opt $m.hidden=16 --out "$TMP/$m.json" >/dev/null 2>&1 &&
    ok || fail "$m with fresh weights"
done
expect_bad_input hdp_algorithm "option hdp.algorithm: 'a2c' is not reinforce or ppo" \
  "${place[@]/placeto/hdp}" --opt hdp.algorithm=a2c
}

# Imitation of the search: labels computed once (the second run reads the cache), a curve of
# accuracy and loss; the policy then guides mcmc's proposals (same seed, same plan).
section_imitation() {
graphs
imitate=(train --graphs "$TMP/g" --cluster k80x4 --method gdp --hidden 8 --updates 3 --episodes 2
  --imitate 300 --labels "$TMP/labels" --perturb 8 --seed 5)
if "$DPLACE" "${imitate[@]}" --out "$TMP/imitate.pt" --log "$TMP/imitate.csv" >/dev/null 2>"$TMP/imitate.err"; then
  [[ $(ls "$TMP/labels" | wc -l) == 3 && $(wc -l <"$TMP/imitate.csv") == 4 ]] && ok ||
    fail "imitate: labels $(ls "$TMP/labels"), curve $(cat "$TMP/imitate.csv")"
  "$DPLACE" "${imitate[@]}" --out "$TMP/imitate2.pt" >/dev/null 2>&1 && same_tensors "$TMP/imitate.pt" "$TMP/imitate2.pt" &&
    ok || fail "imitate: the cached labels train the same policy"
  guided=(place --graph "$TMP/g/enas_cnn_3_1.json" --cluster k80x4 --placer mcmc --evaluations 400
    --opt mcmc.proposal="$TMP/imitate.pt" --opt mcmc.proposal_refresh=16)
  "$DPLACE" "${guided[@]}" --out "$TMP/guided_a.json" >"$TMP/guided.out" 2>&1 && ok || fail "guided mcmc: $(cat "$TMP/guided.out")"
  "$DPLACE" "${guided[@]}" --out "$TMP/guided_b.json" >/dev/null 2>&1
  cmp -s "$TMP/guided_a.json" "$TMP/guided_b.json" && ok || fail "guided mcmc: same seed, different plans"
  grep -q "from $TMP/imitate.pt, [1-9][0-9]* refreshes" "$TMP/guided.out" && ok || fail "guided mcmc: note $(cat "$TMP/guided.out")"
  # Expert iteration: the next round's labels come from mcmc started from this policy's placement
  # too (three more label files, named by the policy's bytes as well).
  "$DPLACE" "${imitate[@]}" --init "$TMP/imitate.pt" --relabel --out "$TMP/round2.pt" >/dev/null 2>"$TMP/round2.err" &&
    [[ $(ls "$TMP/labels" | wc -l) == 6 ]] && ok || fail "imitate --relabel: $(cat "$TMP/round2.err") $(ls "$TMP/labels")"
  # Improving moves: a label holds the best placement and each kept improving move's before and
  # after (an odd number of placements), read back from the cache by a second run.
  improving=("${imitate[@]/$TMP\/labels/$TMP/improving}" --improving)
  "$DPLACE" "${improving[@]}" --out "$TMP/improving.pt" --log "$TMP/improving.csv" >/dev/null 2>"$TMP/improving.err" &&
    [[ $(ls "$TMP/improving" | wc -l) == 3 && $(wc -l <"$TMP/improving.csv") == 4 ]] && ok ||
    fail "imitate --improving: $(cat "$TMP/improving.err") $(ls "$TMP/improving")"
  for f in "$TMP"/improving/*.label; do
    lines=$(wc -l <"$f")  # its key, then an odd number of placements
    ((lines >= 4 && lines % 2 == 0)) || fail "imitate --improving: $f holds $lines lines"
  done
  "$DPLACE" "${improving[@]}" --out "$TMP/improving2.pt" >/dev/null 2>&1 &&
    same_tensors "$TMP/improving.pt" "$TMP/improving2.pt" && ok ||
    fail "imitate --improving: the cached moves train the same policy"
  # Labels are keyed by content: the same cluster under another name shares them, an edited
  # cluster file under the same name gets its own, and a file whose key line differs is made again.
  one=(train --graphs "$TMP/g/enas_cnn_3_1.json" --method gdp --hidden 8 --updates 1 --episodes 2
    --imitate 100 --labels "$TMP/keyed" --quiet)
  cp clusters/k80x4.json "$TMP/machine.json"
  "$DPLACE" "${one[@]}" --cluster k80x4 --out "$TMP/k1.pt" &&
    "$DPLACE" "${one[@]}" --cluster "$TMP/machine.json" --out "$TMP/k2.pt" &&
    [[ $(ls "$TMP/keyed" | wc -l) == 1 ]] && ok || fail "labels: one cluster, two names, two keys"
  sed -i 's/"memory": *"12GiB"/"memory": "6GiB"/' "$TMP/machine.json"
  "$DPLACE" "${one[@]}" --cluster "$TMP/machine.json" --out "$TMP/k3.pt" &&
    [[ $(ls "$TMP/keyed" | wc -l) == 2 ]] && ok || fail "labels: an edited cluster file reused labels"
  label=$(ls "$TMP"/keyed/*.label | head -1)
  sed -i '1s/.*/dplace-label 0/' "$label"
  "$DPLACE" "${one[@]}" --cluster k80x4 --out "$TMP/k4.pt" && [[ $(head -1 "$label") == \
    "dplace-label $(basename "$label" .label)" ]] && ok || fail "labels: a stale key was trusted"
else
  fail "imitate: $(cat "$TMP/imitate.err")"
fi
expect_bad_input improving_without_imitate "--improving: needs --imitate" "${train[@]}" --improving \
  --out "$TMP/x.pt"
"$DPLACE" place --graph "$TMP/g/enas_cnn_3_1.json" --cluster k80x4 --placer mcmc --evaluations 200 \
  --opt mcmc.proposal=gdp >/dev/null 2>&1 && ok || fail "mcmc guided by the bundled gdp policy"
for run in a b; do
  "$DPLACE" place --graph "$TMP/g/enas_cnn_3_1.json" --cluster k80x4 --placer local_search \
    --evaluations 300 --opt local_search.proposal=gdp --out "$TMP/guided_ls_$run.json" >/dev/null 2>&1 ||
    fail "local_search guided by the bundled gdp policy"
done
cmp -s "$TMP/guided_ls_a.json" "$TMP/guided_ls_b.json" && ok || fail "guided local_search: same seed, different plans"
expect_bad_input proposal_unbundled "local_search.proposal: colocrl has no bundled policy" place --graph \
  "$TMP/g/enas_cnn_3_1.json" --cluster k80x4 --placer local_search --opt local_search.proposal=colocrl
expect_bad_input proposal_unbundled_mcmc "mcmc.proposal: colocrl has no bundled policy" place --graph \
  "$TMP/g/enas_cnn_3_1.json" --cluster k80x4 --placer mcmc --opt mcmc.proposal=colocrl
expect_bad_input proposal_missing "none.pt: no such policy file" place --graph \
  "$TMP/g/enas_cnn_3_1.json" --cluster k80x4 --placer mcmc --opt mcmc.proposal="$TMP/none.pt"
expect_bad_input train_relabel "--relabel: needs --imitate and --init" train --graphs "$TMP/g" \
  --cluster k80x4 --relabel --out "$TMP/x.pt"
expect_bad_input train_imitate "--imitate: must be a number in [0, 1e+09], not -1" train --graphs \
  "$TMP/g" --cluster k80x4 --imitate -1 --out "$TMP/x.pt"
}

# bench with regimes: a ladder's rungs (chosen by the ladder's name), only the --placers asked for,
# and bench/curves.py's plots and table from the JSON.
section_bench() {
graphs
cat >"$TMP/ladder.json" <<EOF
{"format": "dplace-suite/1", "description": "d", "objective": "step", "placers": [],
 "reference": {"placer": "mcmc", "evaluations": 64},
 "regimes": [{"name": "curve", "ladder": [8, 32], "placers": ["hdp", "mcmc", "heft"],
              "options": ["hdp.hidden=8"]}],
 "workloads": [{"files": ["$TMP/g/enas_cnn_3_1.json"], "clusters": ["k80x4"], "name": "{stem}@{cluster}"}]}
EOF
if "$DPLACE" bench --suite "$TMP/ladder.json" --regimes curve --placers hdp --placers mcmc --json \
    >"$TMP/ladder_out.json" 2>"$TMP/ladder.err"; then
  ok
  rows=$(/usr/bin/python3 -c "
import json
w = json.load(open('$TMP/ladder_out.json'))['workloads'][0]
print(' '.join(sorted(r['placer'] for r in w['results'])))")
  [[ $rows == "curve@32/hdp curve@32/mcmc curve@8/hdp curve@8/mcmc reference/mcmc" ]] && ok ||
    fail "bench ladder rows: $rows"
  /usr/bin/python3 bench/curves.py "$TMP/ladder_out.json" "$TMP/curves" hdp:mcmc >"$TMP/curves.md" &&
    [[ -s $TMP/curves/curve_enas_cnn_3_1_at_k80x4.svg ]] &&
    grep -q "| enas_cnn_3_1@k80x4 | hdp | mcmc |" "$TMP/curves.md" && ok ||
    fail "bench/curves.py: $(cat "$TMP/curves.md")"
else
  fail "bench ladder: $(cat "$TMP/ladder.err")"
fi
expect_bad_input bench_regime "has no regime 'curv'" bench --suite "$TMP/ladder.json" --regimes curv
}

# The bundled policies' training graphs are the ones their hash lists name (regenerated here as
# models/policies/train_placeto.sh and train_gdp.sh make them), and no test graph of the learned
# suite is one of them.
section_bundled() {
source models/policies/training_graphs.sh
training_graphs "$DPLACE" "$TMP/train/forward" "$TMP/train/training" 8 4
training_graphs "$DPLACE" "$TMP/gdp_train/forward" "$TMP/gdp_train/training" 16 8
LISTS=(models/policies/placeto_train.sha256 models/policies/gdp_train.sha256)
[[ $(cd "$TMP/train" && sha256sum forward/*.json training/*.json | sort) == $(sort "${LISTS[0]}") ]] \
  && ok || fail "the training graphs differ from ${LISTS[0]}"
[[ $(cd "$TMP/gdp_train" && sha256sum forward/*.json training/*.json | sort) == $(sort "${LISTS[1]}") ]] \
  && ok || fail "the training graphs differ from ${LISTS[1]}"
mapfile -t tests < <(/usr/bin/python3 -c "
import json
suite = json.load(open('bench/suites/learned.json'))
for w in suite['workloads']:
    for f in w['files']:
        print(f.replace('{models}', 'models').replace('{data}', 'testdata'))")
[[ ${#tests[@]} -ge 15 ]] && ok || fail "learned suite: ${#tests[@]} test graphs"
for t in "${tests[@]}"; do
  if [[ $t == gen:* ]]; then
    IFS=: read -r _ family seed index <<<"$t"
    "$DPLACE" gen "$family" --count $((index + 1)) --seed "$seed" --out "$TMP/held" --quiet
    file=$TMP/held/${family}_${seed}_${index}.json
  else
    file=$t
  fi
  hash=$(sha256sum "$file" | cut -d' ' -f1)
  grep -q "^$hash " "${LISTS[@]}" && fail "test graph $t is a training graph" || ok
done
}

# Runs the sections named as arguments (all of them without), each a CTest test of its own.
run_sections "$@"

echo "$passed passed, $failed failed"
[[ $failed -eq 0 ]]
