#!/usr/bin/env bash
# Example (documented, not run in CI): pretraining on several GPU hosts with multi_worker_mirrored.
#
# Run the same command on every host, with WORKER_INDEX set to 0, 1, ... and HOSTS listing every host:port:
#
#   HOSTS=host0:12345,host1:12345 WORKER_INDEX=0 SHARED=/mnt/shared bash run_scripts/examples/pretrain_multi_worker_gpu.sh
#   HOSTS=host0:12345,host1:12345 WORKER_INDEX=1 SHARED=/mnt/shared bash run_scripts/examples/pretrain_multi_worker_gpu.sh
#
# --model_dir must be storage every host sees (NFS, GCS): worker 0 (the chief) writes checkpoints, summaries and
# the export there, the others read the chief's checkpoints when resuming, and each worker saves its own input
# position under model_dir/input_state/worker-<i>. Give each worker at least one record file (files are sharded
# per worker; with fewer files than workers every worker reads all of them and keeps its share of records).
# train_batch_size is global: 8 GPUs x 2 hosts x 32 = 512 here. Use --mixed_precision=float16 on GPUs without
# bfloat16 (V100, T4); it scales the loss dynamically and counts skipped steps.
set -euo pipefail
: "${HOSTS:?set HOSTS=host0:port,host1:port,...}"
: "${WORKER_INDEX:?set WORKER_INDEX to the position of this host in HOSTS}"
: "${SHARED:?set SHARED to storage all hosts see}"
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
source "$ROOT/run_scripts/python_env.sh"

WORKERS=$(echo "$HOSTS" | sed 's/\([^,]*\)/"\1"/g')
export TF_CONFIG="{\"cluster\": {\"worker\": [$WORKERS]}, \"task\": {\"type\": \"worker\", \"index\": $WORKER_INDEX}}"

"$PYTHON" "$ROOT/run_scripts/run_pretraining.py" \
  --distribution_strategy=multi_worker_mirrored --all_reduce_alg=nccl \
  --input_file="$SHARED/pretrain/seq128/train.tfrecord-*" \
  --bert_config_file="$SHARED/uncased_L-12_H-768_A-12/bert_config.json" \
  --vocab_file="$SHARED/uncased_L-12_H-768_A-12/vocab.txt" --do_lower_case \
  --model_dir="$SHARED/runs/bert_base_phase1" \
  --max_seq_length=128 --max_predictions_per_seq=20 \
  --train_batch_size=512 --num_train_steps=450000 --num_warmup_steps=10000 --learning_rate=1e-4 \
  --mixed_precision=bfloat16 --steps_per_loop=200 --save_checkpoints_steps=5000 "$@"
