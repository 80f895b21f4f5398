r"""Converts a BERT checkpoint (original TF1, Hugging Face, keras-hub, Model Garden TF2, or ours) into a model
directory.

    python run_scripts/convert_checkpoint.py --input=uncased_L-12_H-768_A-12/bert_model.ckpt \
        --output_dir=models/bert_base_uncased

The output directory holds the checkpoint, bert_config.json, vocab.txt and do_lower_case, and is what every
script takes as --init_checkpoint. --output_format=tf1 writes bert_model.ckpt with the original variable names,
--output_format=model_garden as the Model Garden's TF2 checkpoint (its heads too).
"""

from official.nlp.common import cli  # first: quiets TensorFlow's start-up (see cli.py)

# isort: split

from absl import flags

from official.nlp.checkpoints.conversion import ConversionConfig, convert
from official.nlp.common import config_flags

FLAGS = flags.FLAGS
config_flags.define_flags(FLAGS, ConversionConfig)


def main(argv):
    del argv
    convert(config_flags.config_from_flags(FLAGS, ConversionConfig))  # logs what it wrote


if __name__ == "__main__":
    cli.run(main)
