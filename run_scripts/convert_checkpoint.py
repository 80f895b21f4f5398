r"""Converts a BERT checkpoint (original TF1, Hugging Face, or ours) into a model directory.

    python run_scripts/convert_checkpoint.py --input=uncased_L-12_H-768_A-12/bert_model.ckpt \
        --output_dir=models/bert_base_uncased

The output directory holds the checkpoint, bert_config.json, vocab.txt and do_lower_case, and is what every
script takes as --init_checkpoint. --output_format=tf1 writes bert_model.ckpt with the original variable names.
"""
from official.nlp.common import cli  # first: quiets TensorFlow's start-up (see cli.py)

from absl import flags

from official.nlp.checkpoints import model_dir

FLAGS = flags.FLAGS
flags.DEFINE_string("input", None, "TF1 checkpoint prefix or folder, Hugging Face model folder, or model directory.")
flags.DEFINE_enum("input_format", "auto", ["auto", "tf1", "hf", "ours"], "Format of --input.")
flags.DEFINE_string("output_dir", None, "Model directory to write (must not hold a checkpoint yet).")
flags.DEFINE_enum("output_format", "ours", ["ours", "tf1"], "Checkpoint format to write.")
flags.DEFINE_string("bert_config_file", None, "Overrides the config found next to --input.")
flags.DEFINE_string("vocab_file", None, "Overrides the vocab.txt found next to --input.")
flags.DEFINE_bool("do_lower_case", None, "Overrides the case found with --input (file, folder name or vocab).")
flags.mark_flags_as_required(["input", "output_dir"])


def main(argv):
    del argv
    model_dir.convert_checkpoint(  # logs what it wrote
        FLAGS.input, FLAGS.output_dir, input_format=FLAGS.input_format, output_format=FLAGS.output_format,
        bert_config_file=FLAGS.bert_config_file, vocab_file=FLAGS.vocab_file, do_lower_case=FLAGS.do_lower_case)


if __name__ == "__main__":
    cli.run(main)
