# Sourced by train_placeto.sh, train_gdp.sh and the learned_end_to_end test:
# training_graphs DPLACE FORWARD_DIR TRAINING_DIR FORWARD TRAINING writes FORWARD forward graphs
# (seed 1) of each of the five families of docs/families.md into FORWARD_DIR and TRAINING training
# steps (seed 2) into TRAINING_DIR (the same folder or two). Seed 3 is held out for the benchmark.
training_graphs() {
  local dplace=$1 forward_dir=$2 training_dir=$3 forward=$4 training=$5 family
  for family in enas_cnn enas_rnn nmt nasnet layered; do
    "$dplace" gen "$family" --count "$forward" --seed 1 --out "$forward_dir" --quiet
    "$dplace" gen "$family" --count "$training" --seed 2 --training --out "$training_dir" --quiet
  done
}
