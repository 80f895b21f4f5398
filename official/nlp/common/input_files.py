"""Input files named on a command line: comma-separated paths and glob patterns, expanded the same way by every job
(`create_pretraining_data`, `build_vocab`, the fine-tuning readers)."""

from __future__ import annotations

import glob
import os
from collections.abc import Sequence

from official.nlp.common.errors import InputError


def expand_input_files(input_file: str | Sequence[str]) -> list[str]:
    """A comma-separated list (or a sequence) of paths and glob patterns -> the files, each pattern's matches sorted."""
    patterns = input_file.split(",") if isinstance(input_file, str) else list(input_file)
    files = []
    for pattern in (p.strip() for p in patterns):
        if not pattern:
            continue
        if glob.has_magic(pattern):
            matches = sorted(p for p in glob.glob(pattern) if os.path.isfile(p))
            if not matches:
                raise InputError(f"--input_file pattern {pattern!r} matches no file")
            files.extend(matches)
        elif not os.path.isfile(pattern):
            raise InputError(f"input file {pattern!r} does not exist (or is not a file)")
        else:
            files.append(pattern)
    if not files:
        raise InputError("--input_file names no file")
    return files
