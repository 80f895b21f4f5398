"""reproduce_paper.py as a user runs it: a missing dataset, corpus or vocabulary, or an output folder that cannot be
made, is named in one line (exit status 2 from the script) before any work; nothing is written. The full run is
tests/nlp/paper/test_reproduce.py."""

from __future__ import annotations

import re

import pytest

from official.nlp.common.errors import InputError
from official.nlp.paper.config import PaperConfig
from official.nlp.paper.reproduce import reproduce_paper
from tests.run_scripts.script_runs import assert_user_error, run_script


def _flags(shared_data, tmp_path) -> dict[str, str]:
    return dict(
        input_file=str(shared_data / "wikipedia" / "wiki_00"),
        output_dir=str(tmp_path / "paper"),
        budget="smoke",
        glue_dir=str(shared_data / "glue"),
        squad_file=str(shared_data / "squad" / "dev-v1.1.json"),
        conll_dir=str(shared_data / "conll2003" / "iob2"),
    )


@pytest.mark.parametrize(
    "change, message",
    [
        (dict(glue_dir="{tmp}/glue"), "--glue_dir: {tmp}/glue/MRPC/train.tsv (GLUE MRPC train set) does not exist"),
        (dict(squad_file="{tmp}/dev.json"), "--squad_file: {tmp}/dev.json (SQuAD v1.1 dev set) does not exist"),
        (dict(conll_dir="{tmp}"), "--conll_dir: {tmp}/train.txt (CoNLL-2003 train.txt) does not exist"),
        (dict(input_file="{tmp}/wiki_*"), "--input_file pattern '{tmp}/wiki_*' matches no file"),
        (dict(vocab_file="{tmp}/vocab.txt"), "--vocab_file={tmp}/vocab.txt does not exist"),
        (dict(output_dir="{tmp}/a_file/paper"), "{tmp}/a_file is a regular file, not a folder"),
    ],
)
def test_bad_input_is_refused_before_any_work(shared_data, tmp_path, change, message):
    (tmp_path / "a_file").write_text("not a folder")
    flags = {**_flags(shared_data, tmp_path), **{k: v.format(tmp=tmp_path) for k, v in change.items()}}
    with pytest.raises(InputError, match=re.escape(message.format(tmp=tmp_path))):
        reproduce_paper(PaperConfig(**flags), echo=lambda line: None)
    assert not (tmp_path / "paper").exists()


@pytest.mark.slow
def test_the_script_says_it_in_one_line(shared_data, tmp_path):
    flags = {**_flags(shared_data, tmp_path), "conll_dir": str(tmp_path)}
    result = run_script("reproduce_paper.py", *(f"--{k}={v}" for k, v in flags.items()))
    assert_user_error(
        result, f"reproduce_paper: --conll_dir: {tmp_path}/train.txt (CoNLL-2003 train.txt) does not exist"
    )
    assert not (tmp_path / "paper").exists() and not result.stdout
