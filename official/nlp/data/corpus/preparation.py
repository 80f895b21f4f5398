"""Raw text into BERT's pretraining format: one sentence per line, a blank line between documents.

`prepare_corpus(CorpusConfig(...))` is what `run_scripts/prepare_corpus.py` does. It reads WikiExtractor output,
plain text (`documents`) or a Wikipedia XML dump itself (`dump`, its wikitext parsed by `wikitext`), splits
paragraphs into sentences (`sentences`), and writes a text file (or shards) that
`create_pretraining_data` reads as it is.

**Work.** The input is cut into work units at document boundaries (`units`); each runs on a worker process (all
cores by default) and the main process writes the results in unit order, with at most two units per worker in
flight (`worker_pool`): memory stays bounded whatever the corpus size, and the bytes are the same for any number of
workers. A dump is read as a stream by the main process and its pages sent to the workers in units of about
``unit_mb`` of wikitext; as their number is not known before the end, shards take the units in turn (unit i goes
to shard i mod N) rather than in contiguous runs. Every path may be on ``gs://`` or ``ram://`` (the file layer; a
``ram://`` input runs in this process).

**Output and commit.** Each output file is written under a temporary name and renamed when complete
(`output_files.write_atomically`). A summary (``stats/<name>.json`` next to the output: the counts, the settings,
the splitter's version, the speed) is written last: it is the marker of a complete job. Every output file is written
under a temporary name until the whole input is read, so an input found damaged half-way leaves an earlier run's
output as it was; then the summary is removed, the files put in place, and the earlier run's shards that this one
does not write again (fewer shards) removed. A run killed half-way leaves no summary, never a mix of two runs. An
output that is an input (through a symbolic link too) is refused, and a second job on the same output is refused
while the first runs (`output_folders.check_output_files`, `claims.claim`). An input that gives
no document at all (only stubs) is refused, and nothing is written.

Example:

  >>> summary = prepare_corpus(CorpusConfig(input_file="wiki/text/*/wiki_*", output_file="wiki.txt"))  # doctest: +SKIP
  >>> summary.counts.documents, summary.counts.stubs                                                   # doctest: +SKIP
  (27417, 46299)
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib.metadata
import json
import logging
import os
import posixpath
import time
from collections.abc import Iterator

from official.nlp.common import claims, full_disk, input_files, output_files, output_folders, text_files
from official.nlp.common.errors import InputError
from official.nlp.common.input_files import expand_input_files
from official.nlp.common.output_files import check_target
from official.nlp.common.output_names import default_stats_path, output_paths
from official.nlp.common.processes import interruption, worker_pool
from official.nlp.common.text_files import decode_text, line_number
from official.nlp.data.corpus import documents as documents_lib
from official.nlp.data.corpus import dump as dump_lib
from official.nlp.data.corpus import dump_parts
from official.nlp.data.corpus.documents import Counts
from official.nlp.data.corpus.settings import CorpusConfig
from official.nlp.data.corpus.units import CorpusUnit, file_format, plan_corpus_units

_LOG_EVERY_S = 10


@dataclasses.dataclass
class CorpusSummary:
    """What a `prepare_corpus` run read, wrote and counted (written as JSON to ``summary_file``)."""

    counts: Counts
    input_files: int
    input_bytes: int
    empty_files: int
    output_files: list
    summary_file: str
    seconds: float
    keep_headings: bool = False

    @property
    def mb_per_second(self) -> float:
        return self.input_bytes / 2**20 / max(self.seconds, 1e-9)

    def describe(self) -> str:
        c = self.counts
        return (
            f"{c.documents} documents, {c.sentences} sentences, {c.words} words from {self.input_files} files "
            f"({self.input_bytes / 2**20:.1f} MB in {self.seconds:.1f} s, {self.mb_per_second:.1f} MB/s); "
            f"dropped {c.stubs} stubs without text; {c.headings} section headings and {c.titles} titles "
            f"{'kept' if self.keep_headings else 'dropped'}"
            + (
                f"; dropped {c.redirects} redirects, {c.disambiguations} disambiguation pages and "
                f"{c.other_namespaces} pages of other namespaces"
                if c.redirects or c.disambiguations or c.other_namespaces
                else ""
            )
        )


def prepare_unit(unit: CorpusUnit, keep_headings: bool) -> tuple[bytes, dict]:
    """One work unit in BERT's format (documents joined by a blank line, UTF-8) and its counts (as a dict)."""
    with input_files.open_file(unit.path, "rb") as f:
        f.seek(unit.start)
        raw = f.read(unit.num_bytes)
    first_line = None

    def line_of(i: int) -> int:  # counted only for an error message: it reads the file up to the unit
        nonlocal first_line
        if first_line is None:
            first_line = line_number(unit.path, unit.start) if unit.start else 1
        return first_line + i

    try:
        text = decode_text(raw, unit.path)
    except InputError:
        text = decode_text(raw, unit.path, line_of(0))  # raises again, naming the line in the file
    lines = text.split("\n")
    if unit.input_format == documents_lib.WIKIEXTRACTOR:
        docs = documents_lib.wikiextractor_documents(lines, unit.path, line_of)
    else:
        docs = documents_lib.text_documents(lines)
    counts = Counts()
    out = []
    for document in docs:
        document_lines = documents_lib.document_lines(document, keep_headings, counts)
        if document_lines:
            out.append("\n".join(document_lines) + "\n")
    return "\n".join(out).encode("utf-8"), dataclasses.asdict(counts)


def _shards_of_units(units: list[CorpusUnit], num_shards: int) -> list[list[CorpusUnit]]:
    """Contiguous runs of units, as many units in each shard as can be (at least one: ``len(units) >= num_shards``)."""
    return [units[s * len(units) // num_shards : (s + 1) * len(units) // num_shards] for s in range(num_shards)]


def _earlier_outputs(summary_path: str, paths: list[str], inputs: list[str]) -> list[str]:
    """The output files of the earlier run that `summary_path` records and that this run does not write again (its
    shards ``-of-00004`` where this run writes ``-of-00002``): a rerun removes them, so that no old shard stays
    beside the new ones. Only files that summary lists, in the folder it describes (``stats/``'s parent), that are
    not an input."""
    if not input_files.exists(summary_path):
        return []
    try:
        listed = json.loads(text_files.read_text(summary_path)).get("output_files")
    except (ValueError, AttributeError, InputError):
        return []
    if not isinstance(listed, list):
        return []
    folder = posixpath.dirname(posixpath.dirname(output_folders.normalized(summary_path)))
    kept = {output_folders.normalized(f) for f in [*paths, *inputs]}
    found = []
    for f in listed:
        if not isinstance(f, str):
            continue
        where = output_folders.normalized(f)
        if posixpath.dirname(where) == folder and where not in kept and input_files.isfile(f):
            found.append(f)
    return found


def prepare_corpus(config: CorpusConfig) -> CorpusSummary:
    """Runs the whole job; returns the summary (also written to its file). See the module docstring."""
    start = time.time()
    paths = output_paths(config.output_file)
    summary_path = default_stats_path(config.output_file, paths)
    for path in paths:  # before the input is read: a device or a folder in the output's place
        check_target(path, name="--output_file")
    check_target(summary_path, name="summary file")
    files = expand_input_files(config.input_file)
    # Symbolic links resolved: an input that is a link to an output is the output (a glob over the output's folder
    # catches an earlier run's).
    output_folders.check_output_files(
        [*paths, summary_path],
        flag="--output_file",
        inputs={f"--input_file={config.input_file}": files},
        hint=", or narrow the pattern",
    )
    formats = [file_format(f, config.input_format) for f in files]
    if all(f is None for f in formats):
        raise InputError(f"--input_file: {', '.join(files)} hold(s) no text")
    is_dump = dump_lib.DUMP in formats
    if is_dump:
        _check_dump_inputs(files, formats)
        units = None  # a dump's units are read as a stream: their number is known at the end
    else:
        units = plan_corpus_units(files, formats, max(1, int(config.unit_mb * 2**20)))
        if len(units) < len(paths):
            raise InputError(
                f"--output_file: {len(paths)} shards, but the input makes only {len(units)} work units of "
                f"--unit_mb={config.unit_mb}; write at most {len(units)} shards, or lower --unit_mb"
            )
    # A second job on the same output is refused while this one runs, naming it: a claim on each output file, and
    # one on what the summary describes (``PATH`` of ``PATH@N``, shared by every shard count), in its folder.
    stats_folder, summary_name = output_folders.split(summary_path)
    described = os.path.join(output_folders.split(stats_folder)[0], summary_name.removesuffix(".json"))
    with contextlib.ExitStack() as held:
        for path in dict.fromkeys([*paths, described]):
            held.enter_context(claims.claim(*output_folders.split(path), what=f"--output_file {path}"))
        return _prepare(config, files, formats, units, paths, summary_path, start)


def _prepare(config, files, formats, units, paths, summary_path, start) -> CorpusSummary:
    is_dump = units is None  # a dump's pages are streamed: its units are known only at the end
    output_files.remove_leftovers([*paths, summary_path])  # temporary files of a run killed before its commits
    num_workers = max(1, config.num_workers or os.cpu_count() or 1)
    if units is not None:
        num_workers = min(num_workers, len(units))
    if num_workers > 1 and any(input_files.is_process_local(f) for f in files):
        logging.info("an input is on a filesystem of this process alone (ram://): the units run in this process")
        num_workers = 1
    input_bytes = sum(input_files.getsize(f) for f in files)
    logging.info(
        "%d input files%s, %.1f MB, %s work units, %d output files, %d workers",
        len(files),
        " (Wikipedia dumps)" if is_dump else "",
        input_bytes / 2**20,
        "streamed" if units is None else len(units),
        len(paths),
        num_workers,
    )
    # Every shard is written under a temporary name first: an input found damaged half-way leaves the earlier
    # output as it was. Only then is anything replaced, the marker (the summary) first and last.
    with _temporary_outputs(paths) as temporary:
        if is_dump:
            parts = dump_parts.parts_folder(summary_path)
            with dump_parts.removed_on_input_error(parts):
                counts = _write_dump_outputs(config, files, temporary, num_workers, start, parts)
        else:
            counts = _write_outputs(config, units, temporary, num_workers, start)
        earlier = _earlier_outputs(summary_path, paths, files)
        output_files.remove(summary_path)  # a run killed from here on leaves no summary
        for path in paths:
            output_files.commit(temporary[path], path, name="--output_file")
        for path in earlier:
            logging.info("removed %s, a shard of the earlier run that this one does not write", path)
            output_files.remove(path)
    summary = CorpusSummary(
        counts=counts,
        input_files=len(files),
        input_bytes=input_bytes,
        empty_files=formats.count(None),
        output_files=paths,
        summary_file=summary_path,
        seconds=time.time() - start,
        keep_headings=config.keep_headings,
    )
    _write_summary(summary, config)
    if is_dump:
        dump_parts.remove_parts(parts)  # the outputs and their summary are in place: nothing to resume
    return summary


def _check_dump_inputs(files: list[str], formats: list[str | None]) -> None:
    others = [f for f, kind in zip(files, formats) if kind not in (dump_lib.DUMP, None)]
    if others:
        dump = files[formats.index(dump_lib.DUMP)]
        raise InputError(
            f"--input_file: {dump} is a Wikipedia XML dump but {others[0]} is not; prepare dumps and extracted text "
            "in two runs"
        )


def _write_dump_outputs(
    config: CorpusConfig, files: list[str], temporary: dict[str, str], num_workers: int, start, parts: str
) -> Counts:
    """The pages of the dumps streamed from this process to the workers; shard i mod N takes unit i (each written
    to its temporary name, `temporary`: {output file: temporary name}). Each unit's result is kept in `parts` as
    it is made, and the units an earlier run of the same settings kept there are taken as they are (dump_parts)."""
    paths = list(temporary)
    counts = Counts()  # the reader counts the pages it drops here, the workers' counts are added
    unit_chars = max(1, int(config.unit_mb * 2**20))
    done = dump_parts.open_parts(parts, dump_parts.resume_record(files, config.unit_mb, config.keep_headings))
    tasks = (
        (i, None if i in done else pages, config.keep_headings, parts)
        for i, pages in enumerate(dump_lib.page_units(files, unit_chars, counts))
    )
    finished = [0]

    def note() -> str:
        return (
            f"interrupted after {finished[0]} work units of the dump, kept in {parts}; the same command resumes from "
            "there"
        )

    for path in paths:
        output_files.makedirs_for(path)
    last_log = time.time()
    with contextlib.ExitStack() as stack:
        stack.enter_context(interruption.resumable(note))
        results = stack.enter_context(
            worker_pool.ordered_results(dump_parts.prepare_and_keep, tasks, num_workers=num_workers)
        )
        for p in paths:
            stack.enter_context(full_disk.naming_full_disk(p))
        outs = [stack.enter_context(output_files.open_for_writing(temporary[p], "wb")) for p in paths]
        written = [False] * len(paths)
        for i, (data, unit_counts) in enumerate(results):
            shard = i % len(paths)
            if data:
                outs[shard].write(b"\n" + data if written[shard] else data)
                written[shard] = True
            counts.add(Counts(**unit_counts))
            finished[0] = i + 1
            if time.time() - last_log > _LOG_EVERY_S:
                last_log = time.time()
                logging.info(
                    "%d articles read (%.0f s), %d documents, %d sentences",
                    counts.documents + counts.stubs + counts.disambiguations,
                    last_log - start,
                    counts.documents,
                    counts.sentences,
                )
    for path, wrote in zip(paths, written):
        if not wrote:
            logging.warning("%s holds no document: the dump has fewer work units than shards", path)
    return counts


@contextlib.contextmanager
def _temporary_outputs(paths: list[str]) -> Iterator[dict[str, str]]:
    """{output file: the temporary name this job writes it under}; those not committed are removed on exit."""
    temporary = {path: output_files.temporary_name(path) for path in paths}
    try:
        yield temporary
    finally:
        for tmp in temporary.values():
            if input_files.exists(tmp):
                output_files.remove(tmp)


def _write_outputs(
    config: CorpusConfig, units: list[CorpusUnit], temporary: dict[str, str], num_workers: int, start
) -> Counts:
    """Writes each output file to its temporary name (`temporary`: {output file: temporary name})."""
    counts = Counts()
    done_bytes = 0
    last_log = time.time()
    tasks = [(unit, config.keep_headings) for unit in units]
    paths = list(temporary)
    for path in paths:
        output_files.makedirs_for(path)
    with worker_pool.ordered_results(prepare_unit, tasks, num_workers=num_workers) as results:
        for path, shard_units in zip(paths, _shards_of_units(units, len(paths))):
            written = False
            with full_disk.naming_full_disk(path), output_files.open_for_writing(temporary[path], "wb") as out:
                for unit, (data, unit_counts) in zip(shard_units, results):
                    if data:
                        out.write(b"\n" + data if written else data)
                        written = True
                    counts.add(Counts(**unit_counts))
                    done_bytes += unit.num_bytes
                    if time.time() - last_log > _LOG_EVERY_S:
                        last_log = time.time()
                        logging.info(
                            "%.1f MB read (%.1f MB/s), %d documents, %d sentences",
                            done_bytes / 2**20,
                            done_bytes / 2**20 / (last_log - start),
                            counts.documents,
                            counts.sentences,
                        )
                if path == paths[-1] and not counts.documents:  # every output is still a temporary file
                    raise _nothing_to_write(config, counts)
            if not written:
                logging.warning("%s holds no document: its part of the input has no text", path)
    return counts


def _nothing_to_write(config: CorpusConfig, counts: Counts) -> InputError:
    """The refusal of an input whose every document was dropped: an empty corpus trains nothing."""
    if counts.stubs:
        why = (
            f"all {counts.stubs} of its documents were dropped as stubs without text (a WikiExtractor article that "
            "is a title and no paragraph, or a document of which the sentence splitter keeps nothing)"
        )
    else:
        why = "it holds no document"
    return InputError(
        f"--input_file={config.input_file}: nothing to write, no output was written: {why}; give it files with text "
        "(WikiExtractor writes a stub for every short article: most files hold both)"
    )


def _write_summary(summary: CorpusSummary, config: CorpusConfig) -> None:
    record = {
        **dataclasses.asdict(summary.counts),
        "input_files": summary.input_files,
        "input_bytes": summary.input_bytes,
        "empty_input_files": summary.empty_files,
        "output_files": summary.output_files,
        "seconds": round(summary.seconds, 3),
        "mb_per_second": round(summary.mb_per_second, 3),
        "settings": {"input_format": config.input_format, "keep_headings": config.keep_headings},
        "sentence_splitter": f"sentencex {importlib.metadata.version('sentencex')}",
    }
    if summary.counts.redirects or summary.counts.disambiguations or summary.counts.other_namespaces:
        record["wikitext_parser"] = f"mwparserfromhell {importlib.metadata.version('mwparserfromhell')}"
    output_files.makedirs_for(summary.summary_file)
    output_files.write_text(summary.summary_file, json.dumps(record, indent=1) + "\n", name="summary file")
