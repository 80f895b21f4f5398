#!/usr/bin/env bash
# The paper's recipe: 90% of the steps at sequence length 128, then 10% at 512, continuing from phase 1.
#
#   DATA_128='data/seq128/*' DATA_512='data/seq512/*' BERT_CONFIG=bert_config.json \
#   VOCAB=vocab.txt OUT=/tmp/bert_pretrain bash run_scripts/pretrain_two_phase.sh \
#       --distribution_strategy=mirrored --mixed_precision=bfloat16
#
# Records come from create_pretraining_data.py run twice (--max_seq_length=128 --max_predictions_per_seq=20, and
# 512 / 80). bert_config.json needs max_position_embeddings >= 512 from the start. Extra arguments go to both
# phases. Each phase resumes by itself when the launcher is re-run after a preemption; phase 1 is skipped once
# it is complete. Phase 2 starts from phase 1's export with a fresh optimizer and its own warmup; the model it
# exports ($OUT/phase2/export) is what the fine-tuning scripts take as --init_checkpoint.
set -euo pipefail

: "${DATA_128:?set DATA_128 to the seq-128 TFRecords (glob)}"
: "${DATA_512:?set DATA_512 to the seq-512 TFRecords (glob)}"
: "${BERT_CONFIG:?set BERT_CONFIG to bert_config.json}"
: "${VOCAB:?set VOCAB to vocab.txt}"
: "${OUT:?set OUT to the output directory}"
TOTAL_STEPS="${TOTAL_STEPS:-1000000}"
PHASE1_STEPS="${PHASE1_STEPS:-$((TOTAL_STEPS * 9 / 10))}"
PHASE2_STEPS="${PHASE2_STEPS:-$((TOTAL_STEPS - PHASE1_STEPS))}"
SEQ_1="${SEQ_1:-128}" PREDICTIONS_1="${PREDICTIONS_1:-20}" BATCH_1="${BATCH_1:-256}" LR_1="${LR_1:-1e-4}"
SEQ_2="${SEQ_2:-512}" PREDICTIONS_2="${PREDICTIONS_2:-80}" BATCH_2="${BATCH_2:-256}" LR_2="${LR_2:-1e-4}"
WARMUP_1="${WARMUP_1:-10000}" WARMUP_2="${WARMUP_2:-$((PHASE2_STEPS / 10))}"
DO_LOWER_CASE="${DO_LOWER_CASE:-true}"
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
source "$ROOT/run_scripts/python_env.sh"
export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}"

echo "== phase 1: ${PHASE1_STEPS} steps at sequence length ${SEQ_1}"
"$PYTHON" "$ROOT/run_scripts/run_pretraining.py" \
  --input_file="$DATA_128" --bert_config_file="$BERT_CONFIG" --vocab_file="$VOCAB" \
  --do_lower_case="$DO_LOWER_CASE" --model_dir="$OUT/phase1" \
  --max_seq_length="$SEQ_1" --max_predictions_per_seq="$PREDICTIONS_1" --train_batch_size="$BATCH_1" \
  --num_train_steps="$PHASE1_STEPS" --num_warmup_steps="$WARMUP_1" --learning_rate="$LR_1" "$@"

echo "== phase 2: ${PHASE2_STEPS} steps at sequence length ${SEQ_2}, from $OUT/phase1/export"
"$PYTHON" "$ROOT/run_scripts/run_pretraining.py" \
  --input_file="$DATA_512" --init_checkpoint="$OUT/phase1/export" --model_dir="$OUT/phase2" \
  --max_seq_length="$SEQ_2" --max_predictions_per_seq="$PREDICTIONS_2" --train_batch_size="$BATCH_2" \
  --num_train_steps="$PHASE2_STEPS" --num_warmup_steps="$WARMUP_2" --learning_rate="$LR_2" "$@"

echo "== done: $OUT/phase2/export is the pretrained model directory (--init_checkpoint for fine-tuning)"
