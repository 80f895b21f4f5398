"""Every input file the jobs asked for is checked before any work: `run_classifier --do_eval` without a dev.tsv used
to train a whole epoch before it noticed. The check runs before the model is even resolved, so these tests need
no model (`--init_checkpoint` names nothing) and a refused run leaves `--output_dir` untouched."""

from __future__ import annotations

import os
import shutil

import pytest

from official.nlp.common.errors import InputError, MissingInputError
from official.nlp.tasks import classification, multiple_choice, question_answering, tagging


@pytest.fixture
def mrpc_without_dev(tmp_path, shared_data):
    folder = tmp_path / "MRPC"
    folder.mkdir()
    shutil.copy(shared_data / "glue" / "MRPC" / "train.tsv", folder / "train.tsv")
    return folder


def _refused(run, config, *fragments, error=MissingInputError):
    with pytest.raises(error) as e:
        run(config)
    for fragment in fragments:
        assert fragment in str(e.value)
    assert not os.path.exists(config.output_dir)
    return str(e.value)


def test_classifier_do_eval_without_a_dev_file(tmp_path, mrpc_without_dev):
    config = classification.ClassifierConfig(
        task_name="MRPC",
        data_dir=str(mrpc_without_dev),
        init_checkpoint=str(tmp_path / "no_model"),
        output_dir=str(tmp_path / "out"),
        do_train=True,
        do_eval=True,
    )
    message = _refused(classification.run_classifier, config, "--do_eval needs", "dev.tsv (--data_dir)")
    assert message.endswith("correct --data_dir, or leave out --do_eval")


def test_classifier_do_predict_without_a_test_file(tmp_path, mrpc_without_dev):
    config = classification.ClassifierConfig(
        task_name="MRPC",
        data_dir=str(mrpc_without_dev),
        output_dir=str(tmp_path / "out"),
        do_predict=True,
    )
    _refused(classification.run_classifier, config, "--do_predict needs", "test.tsv")


@pytest.mark.parametrize(
    "module, config_type, run",
    [
        (tagging, "TaggingConfig", "run_ner"),
        (multiple_choice, "MultipleChoiceConfig", "run_swag"),
    ],
)
@pytest.mark.parametrize("job, flag", [("do_eval", "eval_file"), ("do_predict", "predict_file")])
def test_ner_and_swag_check_eval_and_predict_files_first(tmp_path, shared_data, module, config_type, run, job, flag):
    train = shared_data / ("conll2003/iob2/train.txt" if module is tagging else "swag/hf_transformers_sample.jsonl")
    config = getattr(module, config_type)(
        output_dir=str(tmp_path / "out"),
        train_file=str(train),
        do_train=True,
        **{job: True, flag: str(tmp_path / "missing.txt")},
    )
    _refused(getattr(module, run), config, f"--{job} needs {tmp_path / 'missing.txt'} (--{flag})")
    config = getattr(module, config_type)(output_dir=str(tmp_path / "out"), train_file=str(train), **{job: True})
    _refused(getattr(module, run), config, f"--{job} needs --{flag}", error=InputError)


def test_squad_checks_the_predict_file_before_reading_the_training_file(tmp_path, shared_data):
    config = question_answering.SquadConfig(
        output_dir=str(tmp_path / "out"),
        train_file=str(shared_data / "squad" / "dev-v1.1.json"),
        predict_file=str(tmp_path / "dev.json"),
        do_train=True,
        do_predict=True,
    )
    _refused(question_answering.run_squad, config, f"--do_predict needs {tmp_path / 'dev.json'} (--predict_file)")
