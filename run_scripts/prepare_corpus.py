r"""Turns raw text into BERT's pretraining format: one sentence per line, a blank line between documents.

  python run_scripts/prepare_corpus.py --input_file='wiki/text/*/wiki_*' --output_file=corpus/wiki.txt
  python run_scripts/prepare_corpus.py --input_file='enwiki-*-pages-articles*.xml*.bz2' --output_file=corpus/wiki.txt@64

Reads WikiExtractor output (<doc> blocks; title-only stubs dropped, section headings dropped unless
--keep_headings), plain text (a blank line between documents, a paragraph per line) or a Wikipedia XML dump
itself (main-namespace articles; redirects, disambiguation pages and other namespaces dropped and counted; the
wikitext parsed by mwparserfromhell), splits the paragraphs into sentences with sentencex on every core, and prints
what it counted. The output feeds create_pretraining_data as it
is. See `official.nlp.data.corpus.preparation` and docs/corpus.md.
"""

from official.nlp.common import cli  # first: quiets TensorFlow's start-up (see cli.py)

# isort: split

from absl import flags, logging

from official.nlp.common import config_flags
from official.nlp.data.corpus.preparation import prepare_corpus
from official.nlp.data.corpus.settings import CorpusConfig

FLAGS = flags.FLAGS
config_flags.define_flags(FLAGS, CorpusConfig)


def main(_):
    summary = prepare_corpus(config_flags.config_from_flags(FLAGS, CorpusConfig))
    logging.info("wrote %s: %s", ", ".join(summary.output_files), summary.describe())


if __name__ == "__main__":
    cli.run(main)
