"""The rerun's data splits and slices: fixed rules, written once into the output folder.

- **Held-out documents** (Table 6's perplexity): a document of the prepared corpus is held out when the SHA-256 of
  its text, read as a fraction in [0, 1), is below the budget's `heldout_share`. The rule depends on the document
  alone, not on its position or on the other documents.
- **QNLI**: only GLUE's dev set is at hand. A row goes to eval when the SHA-256 of its `index` column, read as a
  fraction, is below `QNLI_EVAL_SHARE` (0.2), else to train.
- **SQuAD v1.1**: the dev file is split by article: an article goes to eval when the SHA-256 of its title, read as a
  fraction, is below `SQUAD_EVAL_SHARE` (0.2), else to train. No paragraph of an eval article is trained on.
- **Slices**: a budget keeps the first N examples of a split: rows (GLUE), sentences (CoNLL-2003), or questions of
  whole paragraphs, in file order, until N questions are in (SQuAD).

Every reader and writer goes through the file layer (a path may be ``gs://``); each output is written atomically.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from collections.abc import Iterator

from official.nlp.common import input_files, output_files, text_files
from official.nlp.common.errors import InputError, MissingInputError

QNLI_EVAL_SHARE = 0.2
SQUAD_EVAL_SHARE = 0.2
GLUE_FOLDERS = {"mrpc": "MRPC", "sst-2": "SST-2", "qnli": "QNLI"}


def hash_fraction(key: str) -> float:
    """`key`'s SHA-256 as a number in [0, 1): the same on every machine and Python (unlike `hash`)."""
    return int(hashlib.sha256(key.encode("utf-8")).hexdigest()[:15], 16) / 16**15


def _require(path: str, what: str, flag: str) -> None:
    if not input_files.isfile(path):
        raise MissingInputError(f"{flag}: {path} ({what}) does not exist or is not a file; see docs/data.md")


def required_files(task: str, glue_dir: str, squad_file: str, conll_dir: str) -> list[tuple[str, str, str]]:
    """`(flag, path, what)` of every file a task's data stage reads."""
    if task == "squad":
        return [("--squad_file", squad_file, "SQuAD v1.1 dev set")]
    if task == "ner":
        return [("--conll_dir", os.path.join(conll_dir, f), f"CoNLL-2003 {f}") for f in ("train.txt", "valid.txt")]
    folder = GLUE_FOLDERS[task]
    splits = ("dev",) if task == "qnli" else ("train", "dev")
    return [("--glue_dir", os.path.join(glue_dir, folder, f"{s}.tsv"), f"GLUE {folder} {s} set") for s in splits]


def check_files(task: str, glue_dir: str, squad_file: str, conll_dir: str) -> None:
    """Refuses a task whose data is not there, naming the flag and the file, before hours of pretraining."""
    for flag, path, what in required_files(task, glue_dir, squad_file, conll_dir):
        _require(path, what, flag)


def _read_lines(path: str) -> list[str]:
    return text_files.read_text(path).splitlines()


def _write_lines(path: str, lines: list[str]) -> None:
    output_files.makedirs_for(path)
    with output_files.write_atomically(path) as f:
        f.write("".join(line + "\n" for line in lines))


def _first(items: list, n: int | None) -> list:
    return items if n is None else items[:n]


def glue_task(task: str, glue_dir: str, target_dir: str, train_examples: int | None, eval_examples: int | None) -> dict:
    """Writes `target_dir/train.tsv` and `dev.tsv` for MRPC, SST-2 or QNLI (QNLI split from its dev set); returns
    the example counts. The header line is kept as it is (MRPC's byte-order mark included)."""
    source = os.path.join(glue_dir, GLUE_FOLDERS[task])
    if task == "qnli":
        path = os.path.join(source, "dev.tsv")
        _require(path, "GLUE QNLI dev set", "--glue_dir")
        header, *rows = _read_lines(path)
        if not header.startswith("index\t"):
            raise InputError(f"{path}: the first line should be the header 'index<TAB>question<TAB>sentence<TAB>label'")
        train, evaluation = [], []
        for row in rows:
            if row:
                (evaluation if hash_fraction(row.split("\t", 1)[0]) < QNLI_EVAL_SHARE else train).append(row)
        splits = {"train": (header, train), "dev": (header, evaluation)}
    else:
        splits = {}
        for split in ("train", "dev"):
            path = os.path.join(source, f"{split}.tsv")
            _require(path, f"GLUE {GLUE_FOLDERS[task]} {split} set", "--glue_dir")
            header, *rows = _read_lines(path)
            splits[split] = (header, [row for row in rows if row])
    counts = {}
    for split, (header, rows) in splits.items():
        kept = _first(rows, train_examples if split == "train" else eval_examples)
        _write_lines(os.path.join(target_dir, f"{split}.tsv"), [header, *kept])
        counts[f"{'train' if split == 'train' else 'eval'}_examples"] = len(kept)
    return counts


def _paragraphs_until(articles: list[dict], max_questions: int | None) -> tuple[list[dict], int]:
    """The articles cut to whole paragraphs, in order, until `max_questions` questions are in."""
    kept, questions = [], 0
    for article in articles:
        if max_questions is not None and questions >= max_questions:
            break
        paragraphs = []
        for paragraph in article["paragraphs"]:
            if max_questions is not None and questions >= max_questions:
                break
            paragraphs.append(paragraph)
            questions += len(paragraph["qas"])
        kept.append({**article, "paragraphs": paragraphs})
    return kept, questions


def squad_split(squad_file: str, target_dir: str, train_examples: int | None, eval_examples: int | None) -> dict:
    """Writes `target_dir/train.json` and `eval.json` from the SQuAD v1.1 dev file, split by article title."""
    _require(squad_file, "SQuAD v1.1 dev set", "--squad_file")
    try:
        data = json.loads(text_files.read_text(squad_file))
        articles = data["data"]
        titles = [a["title"] for a in articles]
    except (json.JSONDecodeError, KeyError, TypeError, UnicodeDecodeError) as e:
        raise InputError(f"--squad_file={squad_file} is not SQuAD JSON ({e}); give dev-v1.1.json") from None
    train = [a for a, t in zip(articles, titles) if hash_fraction(t) >= SQUAD_EVAL_SHARE]
    evaluation = [a for a, t in zip(articles, titles) if hash_fraction(t) < SQUAD_EVAL_SHARE]
    counts = {}
    for name, part, limit in (("train", train, train_examples), ("eval", evaluation, eval_examples)):
        kept, questions = _paragraphs_until(part, limit)
        if not questions:
            raise InputError(f"--squad_file={squad_file}: no {name} questions after the split by article")
        path = os.path.join(target_dir, f"{name}.json")
        output_files.makedirs_for(path)
        output_files.write_text(path, json.dumps({"version": data.get("version", "1.1"), "data": kept}))
        counts[f"{name}_examples"] = questions
        counts[f"{name}_articles"] = len(kept)
    return counts


def _conll_blocks(lines: list[str]) -> Iterator[list[str]]:
    """The blank-line separated blocks of a CoNLL file (a sentence, or a -DOCSTART- line)."""
    block = []
    for line in lines:
        if line.strip():
            block.append(line)
        elif block:
            yield block
            block = []
    if block:
        yield block


def conll_slices(conll_dir: str, target_dir: str, train_examples: int | None, eval_examples: int | None) -> dict:
    """Writes `target_dir/train.txt` and `eval.txt`: the first N sentences of CoNLL-2003's train.txt and
    valid.txt (document lines kept where they fall)."""
    counts = {}
    for source, name, limit in (("train.txt", "train", train_examples), ("valid.txt", "eval", eval_examples)):
        path = os.path.join(conll_dir, source)
        _require(path, f"CoNLL-2003 {source}", "--conll_dir")
        kept, sentences = [], 0
        for block in _conll_blocks(_read_lines(path)):
            is_document = block[0].startswith("-DOCSTART-")
            if not is_document and limit is not None and sentences >= limit:
                break
            kept.append("\n".join(block))
            sentences += not is_document
        if not sentences:
            raise InputError(f"--conll_dir: {path} holds no sentence (word ... tag lines, a blank line between)")
        _write_lines(os.path.join(target_dir, f"{name}.txt"), ["\n\n".join(kept)])
        counts[f"{name}_examples"] = sentences
    return counts


@dataclasses.dataclass
class CorpusSplit:
    """Documents, sentences and words on each side of the held-out split."""

    train_documents: int = 0
    train_sentences: int = 0
    train_words: int = 0
    heldout_documents: int = 0
    heldout_sentences: int = 0
    heldout_words: int = 0


def _documents(path: str) -> Iterator[list[str]]:
    """The documents of a corpus in BERT's format (a sentence per line, a blank line between documents)."""
    document = []
    with input_files.open_file(path, "r") as f:
        for line in f:
            line = line.rstrip("\r\n")
            if line.strip():
                document.append(line)
            elif document:
                yield document
                document = []
    if document:
        yield document


def hold_out_documents(
    corpus: str, train_path: str, heldout_path: str, share: float, max_documents: int | None
) -> CorpusSplit:
    """Splits the first `max_documents` documents of `corpus` (all: None) into training and held-out text."""
    split = CorpusSplit()
    with output_files.write_atomically(train_path) as train, output_files.write_atomically(heldout_path) as heldout:
        for i, document in enumerate(_documents(corpus)):
            if max_documents is not None and i >= max_documents:
                break
            side = "heldout" if hash_fraction("\n".join(document)) < share else "train"
            (heldout if side == "heldout" else train).write("\n".join(document) + "\n\n")
            for name, value in (("documents", 1), ("sentences", len(document))):
                setattr(split, f"{side}_{name}", getattr(split, f"{side}_{name}") + value)
            setattr(split, f"{side}_words", getattr(split, f"{side}_words") + sum(len(s.split()) for s in document))
    if not split.train_documents or not split.heldout_documents:
        raise InputError(
            f"--input_file: {split.train_documents} training and {split.heldout_documents} held-out documents; the "
            "corpus is too small for the budget's held-out share: give more text"
        )
    return split
