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


def _tiny_model(root, type_vocab_size: int = 2) -> str:
    import keras

    from official.nlp.checkpoints import model_dir
    from official.nlp.modeling.configs import BertConfig
    from official.nlp.modeling.encoder import BertEncoder
    from tests import pretraining_records

    vocab = pretraining_records.write_vocab(root / "vocab.txt")
    keras.utils.set_random_seed(0)
    config = BertConfig.preset("tiny", vocab_size=1000, max_position_embeddings=64, type_vocab_size=type_vocab_size)
    encoder = BertEncoder.from_bert_config(config)
    model_dir.save_model_dir(str(root / "tiny"), encoder, vocab_file=vocab, do_lower_case=True)
    return str(root / "tiny")


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    return _tiny_model(tmp_path_factory.mktemp("model"))


def _nothing_trained(output_dir) -> bool:
    return not any(name.startswith("ckpt-") for name in os.listdir(output_dir)) if os.path.isdir(output_dir) else True


def test_a_dev_label_the_training_file_does_not_have_stops_the_job_before_training(tmp_path, tiny_model):
    """Issue 30: a dev label never seen in training was reported only after training had finished."""
    data = tmp_path / "data"
    data.mkdir()
    (data / "train.tsv").write_text("text\tlabel\n" + "good film\tpos\nbad film\tneg\n" * 8)
    (data / "dev.tsv").write_text("text\tlabel\ngood\tpos\nso so\tmixed\n")
    config = classification.ClassifierConfig(
        task_name="generic",
        text_a_column="text",
        data_dir=str(data),
        init_checkpoint=tiny_model,
        output_dir=str(tmp_path / "out"),
        max_seq_length=16,
        train_batch_size=4,
        do_train=True,
        do_eval=True,
    )
    with pytest.raises(InputError, match=r"dev.tsv:3: unknown label 'mixed'; generic has the labels \['neg', 'pos'\]"):
        classification.run_classifier(config)
    assert _nothing_trained(config.output_dir)


@pytest.mark.parametrize("job, flag", [("do_eval", "eval_file"), ("do_predict", "predict_file")])
def test_a_bad_ner_eval_or_predict_file_stops_the_job_before_training(tmp_path, tiny_model, job, flag):
    (tmp_path / "train.txt").write_text("EU B-ORG\nrejects O\nGerman B-MISC\n\nPeter B-PER\nBlackburn I-PER\n\n" * 4)
    (tmp_path / "other.txt").write_text(
        "EU B-ORG\nsays O\n\nNow B-TIME\n\n" if job == "do_eval" else "EU\n\nA B C D\n\n"
    )
    config = tagging.TaggingConfig(
        output_dir=str(tmp_path / "out"),
        init_checkpoint=tiny_model,
        train_file=str(tmp_path / "train.txt"),
        max_seq_length=16,
        train_batch_size=4,
        do_train=True,
        **{job: True, flag: str(tmp_path / "other.txt")},
    )
    with pytest.raises(InputError, match="other.txt"):
        tagging.run_ner(config)
    assert _nothing_trained(config.output_dir)


def test_text_pairs_for_a_model_with_one_token_type_are_refused_before_training(tmp_path, shared_data):
    """Issue 30: segment ids were not checked against type_vocab_size (a traceback from the embedding gather)."""
    (tmp_path / "one_type").mkdir()
    model = _tiny_model(tmp_path / "one_type", type_vocab_size=1)
    data = tmp_path / "data"
    data.mkdir()
    (data / "train.tsv").write_text("a\tb\tlabel\n" + "good film\tyes\tpos\nbad film\tno\tneg\n" * 8)
    common = dict(init_checkpoint=model, max_seq_length=16, train_batch_size=4, do_train=True)
    pairs = classification.ClassifierConfig(
        task_name="generic",
        text_a_column="a",
        text_b_column="b",
        data_dir=str(data),
        output_dir=str(tmp_path / "o1"),
        **common,
    )
    with pytest.raises(InputError, match=r"train.tsv are text pairs, .* type_vocab_size=1: it reads single texts"):
        classification.run_classifier(pairs)
    assert _nothing_trained(pairs.output_dir)
    swag = multiple_choice.MultipleChoiceConfig(
        train_file=str(shared_data / "swag" / "hf_transformers_sample.jsonl"), output_dir=str(tmp_path / "o2"), **common
    )
    with pytest.raises(InputError, match=r"^SWAG inputs \(context, ending\) are text pairs"):
        multiple_choice.run_swag(swag)
    assert _nothing_trained(swag.output_dir)
