#!/usr/bin/env bash
# Example (documented, not run in CI): BERT-Base phase 1 on a Cloud TPU VM (v3-8 / v4-8), run on the TPU VM itself.
#
#   pip install -e .            # on the TPU VM, with the TensorFlow TPU build
#   BUCKET=gs://my-bucket bash run_scripts/examples/pretrain_tpu_vm.sh
#
# Records, config, vocabulary and --model_dir live on GCS: the TPU reads and writes there. bfloat16 is the TPU's
# native compute type; TPUs compile every step with XLA, so --jit_compile is not needed. The input position is
# saved with each checkpoint (the host feeds the TPU cores); on multi-host pod slices add --checkpoint_input=false
# so each host reads its own shard through tf.distribute (a resumed job then restarts the data from its start).
# For the large-batch LAMB recipe, use --optimizer=lamb --train_batch_size=32768 --learning_rate=6e-3
# --num_warmup_steps=2000 on a larger slice.
set -euo pipefail
: "${BUCKET:?set BUCKET=gs://your-bucket}"
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
source "$ROOT/run_scripts/python_env.sh"

"$PYTHON" "$ROOT/run_scripts/run_pretraining.py" \
  --distribution_strategy=tpu --tpu=local \
  --input_file="$BUCKET/pretrain/seq128/train.tfrecord-*" \
  --bert_config_file="$BUCKET/uncased_L-12_H-768_A-12/bert_config.json" \
  --vocab_file="$BUCKET/uncased_L-12_H-768_A-12/vocab.txt" --do_lower_case \
  --model_dir="$BUCKET/runs/bert_base_phase1" \
  --max_seq_length=128 --max_predictions_per_seq=20 \
  --train_batch_size=256 --num_train_steps=900000 --num_warmup_steps=10000 --learning_rate=1e-4 \
  --optimizer=adamw --mixed_precision=bfloat16 \
  --steps_per_loop=1000 --save_checkpoints_steps=10000 "$@"
