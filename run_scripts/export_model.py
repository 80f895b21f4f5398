"""Exports a BERT checkpoint as SavedModels for TF Serving that take raw text (see official/nlp/serving).

    python run_scripts/export_model.py --task=classifier --init_checkpoint=/tmp/mrpc_output \\
        --export_dir=/tmp/mrpc_export

Writes `export_dir/<version>/` (signatures `serving_default` on raw text, `serve_token_ids`, `serve_examples`),
`export_dir/token_ids/<version>/` (needs no tensorflow-text op), `export_dir/keras/<version>.keras`, and for
`--task=encoder` the TF-Hub-style pair `export_dir/hub/<version>/{preprocessor,encoder}`.
--init_checkpoint is a model directory, a fine-tuning --output_dir, or an original or converted checkpoint; labels,
--max_seq_length and the SQuAD settings default to what the fine-tuning job recorded.
"""

from official.nlp.common import cli  # first: quiets TensorFlow's start-up (see cli.py)

# isort: split

from absl import flags, logging

from official.nlp.common import config_flags
from official.nlp.serving.export_config import ExportConfig, export

FLAGS = flags.FLAGS
config_flags.define_flags(FLAGS, ExportConfig)


def main(argv):
    del argv
    result = export(config_flags.config_from_flags(FLAGS, ExportConfig))
    for name, path in result.paths().items():
        logging.info("%s: %s", name, path)
        print(f"{name}: {path}")


if __name__ == "__main__":
    cli.run(main)
