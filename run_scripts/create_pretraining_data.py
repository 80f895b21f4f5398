r"""Creates masked-LM / next-sentence pretraining TFRecords from text (the original script's flags and semantics).

  python run_scripts/create_pretraining_data.py \
      --input_file='corpus/*.txt' --output_file=out/train.tfrecord@16 \
      --vocab_file=vocab.txt --do_lower_case=True --max_seq_length=128 --max_predictions_per_seq=20 \
      --masked_lm_prob=0.15 --random_seed=12345 --dupe_factor=5 --short_seq_prob=0.1

Input: one sentence per line, blank lines between documents. Output: the original record schema; statistics go
to a JSON file next to the output. See `official.nlp.data.pretraining.generator` for how work is split and resumed.
"""

from official.nlp.common import cli  # first: quiets TensorFlow's start-up (see cli.py)

# isort: split

from absl import flags, logging

from official.nlp.common import config_flags
from official.nlp.data.pretraining import generator as pretraining_data

FLAGS = flags.FLAGS
config_flags.define_flags(FLAGS, pretraining_data.PretrainingDataConfig)


def main(_):
    config = config_flags.config_from_flags(FLAGS, pretraining_data.PretrainingDataConfig)
    stats = pretraining_data.create_pretraining_data(config)
    rates = stats.to_dict()["rates"]
    logging.info(
        "wrote %d instances; masked %.3f of tokens (%.3f of non-special), random next %.3f",
        stats.instances,
        rates["masked_fraction"] or 0,
        rates["masked_fraction_of_non_special"] or 0,
        rates["random_next_rate"] or 0,
    )


if __name__ == "__main__":
    cli.run(main)
