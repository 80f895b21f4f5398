r"""How much an encoder's final-layer outputs vary from one input to another: pretrained checkpoints beside random
init of the same config (issue 41: the reading of the transfer curve in docs/paper.md).

For each model of `--model_dirs` (the first one's config also builds the random-init encoder, seeded), the first
`--examples` texts of `--text_file` (the first column of a TSV, a header skipped when `--skip_header`) are tokenized
with the model's own vocabulary, run through the encoder in inference mode, and these are printed:

- `token share`: the variance across inputs of the final-layer vectors of every real token, as a share of their mean
  squared norm (0: every token gets the same vector; near 1: the vectors' mean is 0);
- `token cos`: the mean cosine between the vectors of two different tokens (1: one direction for every token);
- `[CLS] share`, `[CLS] cos`: the same for the `[CLS]` position alone, one vector per text;
- `pooled share`: the share for the pooler's output.

    python -m benchmarks.representation_spread --text_file=datasets/glue/SST-2/dev.tsv --skip_header \
        --model_dirs=output/paper_curve/runs/curve/exports/step16000
"""

from __future__ import annotations

from official.nlp.common import cli  # first: quiets TensorFlow's start-up (see cli.py)

# isort: split

from absl import flags

from benchmarks.spread import spread

flags.DEFINE_list("model_dirs", None, "Model directories (or checkpoints) to compare with random init.", required=True)
flags.DEFINE_string("text_file", None, "Texts, one per line (a TSV's first column).", required=True)
flags.DEFINE_bool("skip_header", False, "The text file's first line is a header.")
flags.DEFINE_integer("examples", 128, "Texts to run through each encoder.")
flags.DEFINE_integer("max_seq_length", 64, "Tokens per text, [CLS] and [SEP] included.")
flags.DEFINE_integer("seed", 1, "Seed of the random-init encoder.")
FLAGS = flags.FLAGS


def main(_):
    from official.nlp.common import text_files
    from official.nlp.common.errors import InputError

    # The flags and the texts are checked before Keras and the models are imported: a refusal takes a moment.
    if FLAGS.examples < 2:
        raise InputError(f"--examples={FLAGS.examples}: a spread across texts needs at least 2; give 2 or more")
    if FLAGS.max_seq_length < 3:
        raise InputError(f"--max_seq_length={FLAGS.max_seq_length}: [CLS], one token and [SEP] need at least 3")
    lines = text_files.read_text(FLAGS.text_file).splitlines()[1 if FLAGS.skip_header else 0 :]
    texts = [line.split("\t")[0] for line in lines if line.strip()][: FLAGS.examples]
    if len(texts) < 2:
        raise InputError(f"--text_file={FLAGS.text_file}: {len(texts)} non-empty lines; it needs at least 2 texts")

    import keras

    from official import bert

    models = [(name, bert.read_model_files(name)) for name in FLAGS.model_dirs]
    keras.utils.set_random_seed(FLAGS.seed)
    first = models[0][1]
    rows = [
        (
            "random init",
            spread(bert.BertEncoder.from_bert_config(first.config), first.tokenizer(), texts, FLAGS.max_seq_length),
        )
    ]
    rows += [
        (name, spread(files.build_encoder(), files.tokenizer(), texts, FLAGS.max_seq_length)) for name, files in models
    ]
    print(f"{len(texts)} texts of {FLAGS.text_file}, final layer, inference mode")
    print(f"{'model':48s}" + "".join(f"{column:>14s}" for column in rows[0][1]))
    for name, values in rows:
        print(f"{name[-48:]:48s}" + "".join(f"{value:14.3f}" for value in values.values()))


if __name__ == "__main__":
    cli.run(main)
