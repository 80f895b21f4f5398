"""The work units of a dump run already done, kept so that the same command resumes after a stop.

Parsing the wikitext is most of a dump's cost (about 13 CPU-hours for the English dump: docs/corpus.md), so a run
keeps each work unit's result as it is made, in ``stats/<output name>.parts/`` beside the output:
``unit-00000042.txt`` (the unit in BERT's format) and then ``unit-00000042.json`` (its counts), each written
atomically, the counts last: they are the unit's marker. ``resume.json`` records what the units depend on (the
dump files with their sizes and modification times, ``--unit_mb``, ``--keep_headings``, the parser's and the
splitter's versions). A run that finds the same record takes the units marked done from there instead of parsing
them again (the dump is still read to the end, which costs a seventh of the parsing); with another record it starts
over, removing the parts it finds. The finished run removes the folder once its outputs and summary are in place,
and so does a run that finds the dump damaged (a new download is a new file, which starts over).

Example:

    done = open_parts(folder, record)      # {0, 1, 2}: the units an earlier run of the same settings kept
    data, counts = prepare_and_keep(3, pages, keep_headings=False, folder=folder)   # on a worker
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import json
import logging
import os
import re
from collections.abc import Iterator

from official.nlp.common import input_files, output_files, text_files
from official.nlp.common.errors import InputError
from official.nlp.data.corpus import dump as dump_lib

RECORD_FILE = "resume.json"
_PART = re.compile(r"unit-(\d{8})\.(txt|json)")


def parts_folder(summary_path: str) -> str:
    """``stats/<name>.parts`` for the summary ``stats/<name>.json``."""
    return summary_path.removesuffix(".json") + ".parts"


def resume_record(files: list[str], unit_mb: float, keep_headings: bool) -> dict:
    """What a unit's result depends on: a run with another record does not take an earlier run's units."""
    stats = []
    for path in files:
        if input_files.is_remote(path):
            stat = input_files.gfile().stat(path)
            size, mtime = stat.length, stat.mtime_nsec
        else:  # without TensorFlow, which a dump run does not otherwise import
            stat = os.stat(path)
            size, mtime = stat.st_size, stat.st_mtime_ns
        stats.append([input_files.absolute(path), int(size), int(mtime)])
    return {
        "dump_files": stats,
        "unit_mb": unit_mb,
        "keep_headings": keep_headings,
        "wikitext_parser": f"mwparserfromhell {importlib.metadata.version('mwparserfromhell')}",
        "sentence_splitter": f"sentencex {importlib.metadata.version('sentencex')}",
    }


def _unit_paths(folder: str, index: int) -> tuple[str, str]:
    base = os.path.join(folder, f"unit-{index:08d}")
    return base + ".txt", base + ".json"


def _remove_leftovers(folder: str) -> None:
    """The temporary names of parts whose writer is gone (a run killed while it wrote one)."""
    targets = {name.split(".tmp-")[0] for name in input_files.listdir(folder) if ".tmp-" in name}
    output_files.remove_leftovers([os.path.join(folder, t) for t in targets if _PART.fullmatch(t)])


def remove_parts(folder: str) -> None:
    """Deletes the parts this job's kind writes (`_PART`, `RECORD_FILE`), then the folder if nothing else is in it."""
    if not input_files.isdir(folder):
        return
    _remove_leftovers(folder)
    for name in input_files.listdir(folder):
        if _PART.fullmatch(name) or name == RECORD_FILE:
            output_files.remove(os.path.join(folder, name))
    if not input_files.listdir(folder):
        output_files.rmtree(folder)


@contextlib.contextmanager
def removed_on_input_error(folder: str) -> Iterator[None]:
    """Within the block, an input found bad removes the parts (and `stats/`, when this run made it): the dump is
    fixed by downloading it again, which a rerun does not resume from. A stop or a crash keeps them."""
    stats = os.path.dirname(folder)
    made_stats = not input_files.isdir(stats)
    try:
        yield
    except InputError:
        remove_parts(folder)
        if made_stats and input_files.isdir(stats) and not input_files.listdir(stats):
            output_files.rmtree(stats)
        raise


def open_parts(folder: str, record: dict) -> set[int]:
    """The indices of the units an earlier run with the same `record` kept in `folder` (marked by their counts
    file); with another record, or none, the folder is emptied of parts and `record` written: an empty set."""
    record_path = os.path.join(folder, RECORD_FILE)
    if input_files.exists(record_path):
        try:
            recorded = json.loads(text_files.read_text(record_path))
        except (ValueError, InputError):
            recorded = None
        if recorded == record:
            _remove_leftovers(folder)
            names = input_files.listdir(folder)
            done = {int(m.group(1)) for m in map(_PART.fullmatch, names) if m and m.group(2) == "json"}
            done = {i for i in done if f"unit-{i:08d}.txt" in names}
            logging.info("resuming: %d work units of an earlier run of the same settings are in %s", len(done), folder)
            return done
        logging.info("%s holds the work units of a run with other inputs or settings: starting over", folder)
        remove_parts(folder)
    output_files.makedirs(folder)
    output_files.write_text(record_path, json.dumps(record, indent=1) + "\n")
    return set()


def prepare_and_keep(index: int, pages: list | None, keep_headings: bool, folder: str) -> tuple[bytes, dict]:
    """`dump.prepare_pages` of unit `index`, kept in `folder`; `pages` None: the unit an earlier run kept."""
    data_path, counts_path = _unit_paths(folder, index)
    if pages is None:
        return input_files.read_bytes(data_path), json.loads(text_files.read_text(counts_path))
    data, counts = dump_lib.prepare_pages(pages, keep_headings)
    output_files.write_bytes(data_path, data)
    output_files.write_text(counts_path, json.dumps(counts))  # the unit's marker, last
    return data, counts
