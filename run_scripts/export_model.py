"""Exports a BERT checkpoint as SavedModels for TF Serving that take raw text (see official/nlp/serving).

    python run_scripts/export_model.py --task=classifier --init_checkpoint=/tmp/mrpc_output \\
        --export_dir=/tmp/mrpc_export

Writes `export_dir/<version>/` (signatures `serving_default` on raw text, `serve_token_ids`, `serve_examples`),
`export_dir/token_ids/<version>/` (needs no tensorflow-text op), `export_dir/keras/<version>.keras`, and for
`--task=encoder` the TF-Hub-style pair `export_dir/hub/<version>/{preprocessor,encoder}`.
--init_checkpoint is a model directory, a fine-tuning --output_dir, or an original or converted checkpoint; labels,
--max_seq_length and the SQuAD settings default to what the fine-tuning job recorded.
"""
from absl import flags, logging

from official.nlp.common import cli
from official.nlp.serving import exporter

FLAGS = flags.FLAGS
flags.DEFINE_enum("task", None, list(exporter.TASKS), "What to export.")
flags.DEFINE_string("init_checkpoint", None, "Model directory, fine-tuning --output_dir or checkpoint prefix.")
flags.DEFINE_string("export_dir", None, "Base directory; each export is a new numbered version in it.")
flags.DEFINE_integer("version", None, "Version number (default: one more than the largest there).", lower_bound=1)
flags.DEFINE_string("bert_config_file", None, "Defaults to bert_config.json next to --init_checkpoint.")
flags.DEFINE_string("vocab_file", None, "Defaults to vocab.txt next to --init_checkpoint.")
flags.DEFINE_bool("do_lower_case", None, "Defaults to the model directory's do_lower_case.")
flags.DEFINE_integer("max_seq_length", None, "Tokens per packed sequence (default: the fine-tuning job's, else 128).",
                     lower_bound=3)
flags.DEFINE_list("label_names", None, "Class names in label-index order (default: the fine-tuning job's).")
flags.DEFINE_bool("text_pair", None, "encoder/classifier: serving_default takes text_a and text_b "
                  "(default: from the fine-tuning task, GLUE pair tasks take two).")
flags.DEFINE_integer("doc_stride", None, "SQuAD: tokens between window starts (default 128).", lower_bound=1)
flags.DEFINE_integer("max_query_length", None, "SQuAD: question tokens kept (default 64).", lower_bound=1)
flags.DEFINE_integer("n_best_size", None, "SQuAD: start/end candidates per window (default 20).", lower_bound=1)
flags.DEFINE_integer("max_answer_length", None, "SQuAD: longest answer in tokens (default 30).", lower_bound=1)
flags.DEFINE_bool("version_2_with_negative", None, "SQuAD 2.0: the answer may be empty.")
flags.DEFINE_float("null_score_diff_threshold", None, "SQuAD 2.0: empty when null - best > this (default 0).")
flags.DEFINE_bool("keras_file", True, "Also write the Keras model as a .keras file.")
flags.mark_flags_as_required(["task", "init_checkpoint", "export_dir"])


def main(argv):
    del argv
    squad = {name: FLAGS[name].value for name in ("doc_stride", "max_query_length", "n_best_size",
                                                  "max_answer_length", "version_2_with_negative",
                                                  "null_score_diff_threshold") if FLAGS[name].value is not None}
    paths = exporter.export_model(
        FLAGS.task, FLAGS.init_checkpoint, FLAGS.export_dir, max_seq_length=FLAGS.max_seq_length,
        label_names=FLAGS.label_names, text_pair=FLAGS.text_pair, version=FLAGS.version,
        bert_config_file=FLAGS.bert_config_file, vocab_file=FLAGS.vocab_file, do_lower_case=FLAGS.do_lower_case,
        squad_settings=squad, keras_file=FLAGS.keras_file)
    for name, path in paths.items():
        logging.info("%s: %s", name, path)
        print(f"{name}: {path}")


if __name__ == "__main__":
    cli.run(main)
