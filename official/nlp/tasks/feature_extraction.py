"""Feature extraction: per-token vectors from chosen encoder layers, and sentence vectors.

The input and the JSON-lines output follow google-research/bert `extract_features.py`: one example per line,
`text_a ||| text_b` for a pair; the output line `i` is

    {"linex_index": i, "features": [{"token": "[CLS]", "layers": [{"index": -1, "values": [...]}, ...]}, ...]}

with values rounded to 6 decimals. Two additions: `output_format="concat"` writes one `"values"` list per token
that concatenates the chosen layers in the order given (the paper's best feature-based NER input is the last
four layers concatenated), and `write_sentence_vectors` writes one vector per example (the tanh pooler output,
or the mean over real tokens of the chosen layers concatenated, as sentence-transformers models are used).

`extract` yields results a batch at a time and `write_jsonl` writes each and lets it go, so memory does not grow
with the input. To keep sentence vectors on the way, pass the results through `collect_sentence_vectors`: it keeps
one vector per example (a copy, so the batch's token vectors are freed).

Example:

    from official.nlp.checkpoints import model_dir
    from official.nlp.checkpoints import model_loading
    files = model_loading.read_model_files("models/minilm")
    examples = read_examples("data/sentence_pairs.txt")
    results = extract(files.build_encoder(), files.tokenizer(), examples, layers=[-1, -2, -3, -4])
    vectors = []
    write_jsonl("features.jsonl", collect_sentence_vectors(results, "mean", vectors), layers=[-1, -2, -3, -4])
    write_sentence_vectors("vectors.npy", vectors)

or all of it, as `run_scripts/extract_features.py` does:

    run_feature_extraction(FeatureExtractionConfig(input_file="data/sentence_pairs.txt",
                                                   output_file="features.jsonl", init_checkpoint="models/minilm"))
"""

from __future__ import annotations

import collections
import dataclasses
import json
import re
from collections.abc import Iterable, Iterator, Sequence

import numpy as np
import tensorflow as tf
from absl import logging

from official.nlp.checkpoints import init_checkpoint as init_checkpoint_lib
from official.nlp.common import input_files, output_folders
from official.nlp.common.config_flags import CheckedConfig, field
from official.nlp.common.errors import InputError
from official.nlp.common.output_files import write_atomically
from official.nlp.common.text_files import decode_line
from official.nlp.modeling.configs import DEFAULT_SEQ_LENGTH, check_seq_length
from official.nlp.tokenizers.packing import removal_counts

_PAIR_SEPARATOR = re.compile(r"^(.*) \|\|\| (.*)$")
# Batches are padded to a multiple of this many tokens (not always to max_seq_length): real tokens give the same
# vectors whatever the padding, and a few bucket sizes keep the number of traced graphs small.
_LENGTH_BUCKET = 32


@dataclasses.dataclass(frozen=True)
class ExtractionExample:
    """One input line; `unique_id` is its 0-based line number (the original's `linex_index`)."""

    unique_id: int
    text_a: str
    text_b: str | None = None


@dataclasses.dataclass(frozen=True)
class InputFeatures:
    unique_id: int
    tokens: list[str]
    input_ids: list[int]
    input_type_ids: list[int]


@dataclasses.dataclass
class ExampleResult:
    """Vectors of one example: `layers[k]` is `[num_tokens, H]` for the k-th requested layer."""

    unique_id: int
    tokens: list[str]
    layers: list[np.ndarray]
    pooled: np.ndarray


def read_examples(input_file: str) -> list[ExtractionExample]:
    """Reads `text_a` or `text_a ||| text_b` lines. Blank lines are skipped but keep their line number as id."""
    examples = []
    skipped = 0
    with input_files.open_file(input_file, "rb") as f:
        for line_number, raw in enumerate(f):
            line = decode_line(raw, input_file, line_number + 1).strip()
            if not line:
                skipped += 1
                continue
            # The separator counts also where strip() has eaten a space next to it ("|||", "a |||", "||| b"):
            # the original then tokenized the bars as text ([CLS] | | | [SEP]), which is never what was meant.
            match = _PAIR_SEPARATOR.match(f" {line} ")
            if match is None:
                examples.append(ExtractionExample(line_number, line))
                continue
            text_a, text_b = match.group(1).strip(), match.group(2).strip()
            if not text_a or not text_b:
                side = "on either side" if not (text_a or text_b) else ("before" if not text_a else "after") + " it"
                raise InputError(
                    f"{input_file}, line {line_number + 1}: {line!r} has the pair separator ' ||| ' "
                    f"but no text {side}; write `text_a ||| text_b`, or `text_a` alone"
                )
            examples.append(ExtractionExample(line_number, text_a, text_b))
    if not examples:
        raise InputError(f"{input_file} holds no text: write one example per line, `text_a` or `text_a ||| text_b`")
    if skipped:
        logging.info("%s: skipped %d blank line(s)", input_file, skipped)
    return examples


def truncate_seq_pair(tokens_a: list, tokens_b: list, max_length: int) -> None:
    """Truncates in place, one token at a time from the end of the longer list (B on a tie), as the original.

    Cutting the longer one keeps the most information: a token of a short segment carries more than one of a
    long segment.
    """
    cut_a, cut_b = removal_counts(len(tokens_a), len(tokens_b), max_length)
    del tokens_a[len(tokens_a) - cut_a :]
    del tokens_b[len(tokens_b) - cut_b :]


def convert_extraction_examples(
    examples: Iterable[ExtractionExample], max_seq_length: int, tokenizer
) -> list[InputFeatures]:
    """`[CLS] A [SEP]` or `[CLS] A [SEP] B [SEP]`, truncated to `max_seq_length` as in the original."""
    if max_seq_length < 3:
        raise InputError(f"max_seq_length must be at least 3 for [CLS] A [SEP] B [SEP], got {max_seq_length}")
    features = []
    truncated = 0
    for example in examples:
        tokens_a = tokenizer.tokenize(example.text_a)
        tokens_b = tokenizer.tokenize(example.text_b) if example.text_b else []
        before = len(tokens_a) + len(tokens_b)
        if tokens_b:
            truncate_seq_pair(tokens_a, tokens_b, max_seq_length - 3)
        else:
            tokens_a = tokens_a[: max_seq_length - 2]
        truncated += len(tokens_a) + len(tokens_b) < before
        tokens = ["[CLS]", *tokens_a, "[SEP]"]
        type_ids = [0] * len(tokens)
        if tokens_b:
            tokens += [*tokens_b, "[SEP]"]
            type_ids += [1] * (len(tokens_b) + 1)
        features.append(InputFeatures(example.unique_id, tokens, tokenizer.convert_tokens_to_ids(tokens), type_ids))
    if truncated:
        logging.warning("%d example(s) were truncated to max_seq_length=%d", truncated, max_seq_length)
    return features


def _pad_batch(batch: Sequence[InputFeatures], max_seq_length: int) -> dict[str, np.ndarray]:
    longest = max(len(f.input_ids) for f in batch)
    length = min(max_seq_length, -(-longest // _LENGTH_BUCKET) * _LENGTH_BUCKET)
    ids = np.zeros([len(batch), length], np.int32)
    type_ids = np.zeros_like(ids)
    mask = np.zeros_like(ids)
    for row, feature in enumerate(batch):
        n = len(feature.input_ids)
        ids[row, :n] = feature.input_ids
        type_ids[row, :n] = feature.input_type_ids
        mask[row, :n] = 1
    return {"input_word_ids": ids, "input_mask": mask, "input_type_ids": type_ids}


def parse_layers(text: str) -> list[int]:
    """``"-1,-2,-3,-4"`` (the `--layers` flag) -> ``[-1, -2, -3, -4]``."""
    try:
        layers = [int(x) for x in text.split(",")]
    except ValueError:
        raise InputError(
            f"--layers={text!r}: write comma-separated layer indexes, such as -1,-2,-3,-4 (-1 is the last layer)"
        ) from None
    return layers


def _check_settings(
    layers: Sequence[int], num_layers: int, max_seq_length: int, max_positions: int, batch_size: int
) -> None:
    bad = [i for i in layers if not -num_layers <= i < num_layers]
    if bad or not layers:
        raise InputError(
            f"--layers {list(layers)}: the model has {num_layers} layers, so each index must be in "
            f"[{-num_layers}, {num_layers - 1}] (-1 is the last layer)"
        )
    if max_seq_length < 3:
        raise InputError(f"--max_seq_length={max_seq_length}: must be at least 3 ([CLS] A [SEP] B [SEP])")
    check_seq_length(max_seq_length, max_positions)
    if batch_size < 1:
        raise InputError(f"--batch_size={batch_size}: must be at least 1")


def extract(
    encoder,
    tokenizer,
    examples: Sequence[ExtractionExample],
    *,
    layers: Sequence[int] = (-1, -2, -3, -4),
    max_seq_length: int = DEFAULT_SEQ_LENGTH,
    batch_size: int = 32,
) -> Iterator[ExampleResult]:
    """Runs `encoder` over `examples` and yields one `ExampleResult` per example, in input order.

    The settings are checked at the call (not at the first result). A result's arrays are views into its
    batch's outputs: keep `sentence_vector`s (copies), not results, to let batches go.
    """
    layers = list(layers)
    _check_settings(
        layers,
        len(encoder.output["encoder_outputs"]),
        max_seq_length,
        encoder.get_config()["max_position_embeddings"],
        batch_size,
    )
    features = convert_extraction_examples(examples, max_seq_length, tokenizer)

    @tf.function(reduce_retracing=True)
    def run(inputs):
        outputs = encoder(inputs, training=False)
        return [outputs["encoder_outputs"][i] for i in layers], outputs["pooled_output"]

    def results() -> Iterator[ExampleResult]:
        for start in range(0, len(features), batch_size):
            batch = features[start : start + batch_size]
            layer_values, pooled = run(_pad_batch(batch, max_seq_length))
            layer_values = [v.numpy() for v in layer_values]
            pooled = pooled.numpy()
            for row, feature in enumerate(batch):
                n = len(feature.tokens)
                yield ExampleResult(feature.unique_id, feature.tokens, [v[row, :n] for v in layer_values], pooled[row])

    return results()


def _rounded(values: np.ndarray) -> list[float]:
    return [round(float(x), 6) for x in values]


def write_jsonl(
    output_file: str, results: Iterable[ExampleResult], *, layers: Sequence[int], output_format: str = "original"
) -> int:
    """Writes JSON lines in the original layout (`"original"`) or with the layers concatenated (`"concat"`).

    Streams: each result is written and dropped. Returns the number of examples written.
    """
    if output_format not in ("original", "concat"):
        raise InputError(f"output_format must be 'original' or 'concat', got {output_format!r}")
    count = 0
    with write_atomically(output_file, name="--output_file") as writer:
        for result in results:
            features = []
            for position, token in enumerate(result.tokens):
                entry = collections.OrderedDict(token=token)
                if output_format == "original":
                    entry["layers"] = [
                        collections.OrderedDict(index=index, values=_rounded(values[position]))
                        for index, values in zip(layers, result.layers)
                    ]
                else:
                    entry["layers"] = list(layers)
                    entry["values"] = _rounded(np.concatenate([values[position] for values in result.layers]))
                features.append(entry)
            line = collections.OrderedDict(linex_index=result.unique_id, features=features)
            writer.write(json.dumps(line) + "\n")
            count += 1
    return count


def _check_pooling(pooling: str) -> None:
    if pooling not in ("pooled", "mean"):
        raise InputError(f"sentence pooling must be 'pooled' or 'mean', got {pooling!r}")


def sentence_vector(result: ExampleResult, pooling: str = "pooled") -> np.ndarray:
    """`[D]`: the pooler output (`"pooled"`) or the mean over tokens of the chosen layers (`"mean"`).

    `"mean"` averages every token, `[CLS]` and `[SEP]` included, as sentence-transformers' mean pooling does. The
    vector is a new array, so keeping it does not keep the batch's outputs alive.
    """
    _check_pooling(pooling)
    if pooling == "pooled":
        return np.array(result.pooled)
    return np.concatenate(result.layers, axis=-1).mean(axis=0)


def sentence_vectors(results: Iterable[ExampleResult], pooling: str = "pooled") -> np.ndarray:
    """`[num_examples, D]`: `sentence_vector` of each result."""
    _check_pooling(pooling)
    return np.stack([sentence_vector(r, pooling) for r in results])


def collect_sentence_vectors(results: Iterable[ExampleResult], pooling: str, into: list) -> Iterator[ExampleResult]:
    """Passes `results` through unchanged, appending the `sentence_vector` of each to `into` on the way.

    With `write_jsonl`, this writes the token vectors and keeps only one vector per example in memory.
    """
    _check_pooling(pooling)

    def passed() -> Iterator[ExampleResult]:
        for result in results:
            into.append(sentence_vector(result, pooling))
            yield result

    return passed()


def write_sentence_vectors(path: str, vectors: Sequence[np.ndarray] | np.ndarray) -> np.ndarray:
    """Saves the vectors (one per example, e.g. from `collect_sentence_vectors`) as a `[num_examples, D]` `.npy`
    (row k is the k-th non-blank input line); returns that array."""
    array = np.stack(vectors) if not isinstance(vectors, np.ndarray) else vectors
    with write_atomically(path, "wb") as f:
        np.save(f, array)
    return array


@dataclasses.dataclass
class FeatureExtractionConfig(CheckedConfig):
    """The settings of `run_feature_extraction`; the field names are the flags of `extract_features.py`."""

    input_file: str = field(path="path", help="Text file: `text_a` or `text_a ||| text_b` per line.")
    output_file: str = field(path="path", help="JSON lines output.")
    init_checkpoint: str = field(path="path", help="Model directory or original TF1 checkpoint prefix.")
    layers: str = field("-1,-2,-3,-4", help="Comma-separated encoder layer indexes (-1 is the last).")
    bert_config_file: str | None = field(
        None, path="path", help="Defaults to bert_config.json next to --init_checkpoint."
    )
    vocab_file: str | None = field(None, path="path", help="Defaults to vocab.txt next to --init_checkpoint.")
    do_lower_case: bool | None = field(None, help="Defaults to the model directory's do_lower_case.")
    max_seq_length: int = field(
        DEFAULT_SEQ_LENGTH, minimum=3, help="Maximum WordPiece tokens per example, [CLS] and [SEP] included."
    )
    batch_size: int = field(32, minimum=1, help="Examples per forward pass.")
    output_format: str = field(
        "original",
        enum=["original", "concat"],
        help=("original: one values list per layer; concat: the chosen layers concatenated per token."),
    )
    sentence_vectors_file: str | None = field(
        None, path="path", help="Optional .npy with one sentence vector per example."
    )
    sentence_pooling: str = field(
        "pooled",
        enum=["pooled", "mean"],
        help=(
            "pooled: the tanh pooler on [CLS] (on the last token for a left-to-right model); mean: mean over tokens "
            "of the chosen layers concatenated."
        ),
    )


@dataclasses.dataclass
class FeatureExtractionResult:
    """What `run_feature_extraction` wrote: the number of examples, and the sentence vectors' shape (or None)."""

    examples: int
    sentence_vectors_shape: tuple[int, ...] | None


def run_feature_extraction(config: FeatureExtractionConfig) -> FeatureExtractionResult:
    """Writes the token vectors of `config.input_file` (and its sentence vectors, when asked for)."""
    layers = parse_layers(config.layers)
    outputs = [config.output_file, *([config.sentence_vectors_file] if config.sentence_vectors_file else [])]
    named = {f"--{name}={getattr(config, name)}": [getattr(config, name)] for name in ("input_file", "vocab_file")}
    output_folders.check_output_files(outputs, flag="--output_file", inputs={k: v for k, v in named.items() if v[0]})
    examples = read_examples(config.input_file)  # first: bad input fails before any model work
    files = init_checkpoint_lib.resolve_model_files(
        config.init_checkpoint,
        bert_config_file=config.bert_config_file,
        vocab_file=config.vocab_file,
        do_lower_case=config.do_lower_case,
    )
    results = extract(
        files.build_encoder(),
        files.tokenizer(),
        examples,
        layers=layers,
        max_seq_length=config.max_seq_length,
        batch_size=config.batch_size,
    )
    vectors = []  # One sentence vector per example, kept while the token vectors stream to the file.
    if config.sentence_vectors_file:
        results = collect_sentence_vectors(results, config.sentence_pooling, vectors)
    count = write_jsonl(config.output_file, results, layers=layers, output_format=config.output_format)
    shape = None
    if config.sentence_vectors_file:
        shape = write_sentence_vectors(config.sentence_vectors_file, vectors).shape
    return FeatureExtractionResult(count, shape)
