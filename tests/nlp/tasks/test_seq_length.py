"""One rule between the sequence length and the model (`configs.check_seq_length`), checked at start-up by every
job: here the fine-tuning jobs (NER, SWAG, classification, SQuAD) refuse a `--max_seq_length` longer than the model's
position embeddings before they read a data file (the files given here are not in the task's format, so a later
check would report them instead)."""

from __future__ import annotations

import pytest

from official.nlp.checkpoints import model_dir
from official.nlp.common.errors import InputError
from official.nlp.modeling import configs
from official.nlp.modeling.configs import BertConfig
from official.nlp.modeling.encoder import BertEncoder
from official.nlp.tasks import classification, multiple_choice, question_answering, tagging
from official.nlp.tasks.classifier_config import ClassifierConfig

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "b", "c"]
POSITIONS = 32
REFUSAL = rf"^--max_seq_length=64 exceeds the model's max_position_embeddings \({POSITIONS}\) in its bert_config\.json"


@pytest.fixture(scope="module")
def short_model(tmp_path_factory) -> str:
    root = tmp_path_factory.mktemp("short_model")
    vocab = root / "vocab.txt"
    vocab.write_text("\n".join(VOCAB) + "\n")
    config = BertConfig.preset("tiny", vocab_size=len(VOCAB), max_position_embeddings=POSITIONS)
    path = str(root / "model")
    model_dir.save_model_dir(path, BertEncoder.from_bert_config(config), vocab_file=str(vocab), do_lower_case=True)
    return path


def _not_data(path) -> str:
    path.write_text("not a data file of any task\n")
    return str(path)


def test_the_rule():
    configs.check_seq_length(POSITIONS, POSITIONS)
    with pytest.raises(InputError, match=r"^--max_seq_length=33 exceeds .* \(32\) .*; lower --max_seq_length"):
        configs.check_seq_length(POSITIONS + 1, POSITIONS)
    with pytest.raises(InputError, match=r"^seq_length=40 exceeds"):
        configs.check_seq_length(40, POSITIONS, name="seq_length")


def test_ner_checks_the_sequence_length_at_start_up(short_model, tmp_path):
    config = tagging.TaggingConfig(
        init_checkpoint=short_model,
        output_dir=str(tmp_path / "out"),
        max_seq_length=64,
        do_train=True,
        train_file=_not_data(tmp_path / "train.txt"),
    )
    with pytest.raises(InputError, match=REFUSAL):
        tagging.run_ner(config)
    with pytest.raises(InputError, match=REFUSAL):
        tagging.make_ner_task(config)
    assert not (tmp_path / "out").exists()


def test_swag_checks_the_sequence_length_at_start_up(short_model, tmp_path):
    config = multiple_choice.MultipleChoiceConfig(
        init_checkpoint=short_model,
        output_dir=str(tmp_path / "out"),
        max_seq_length=64,
        do_train=True,
        train_file=_not_data(tmp_path / "train.csv"),
    )
    with pytest.raises(InputError, match=REFUSAL):
        multiple_choice.run_swag(config)
    with pytest.raises(InputError, match=REFUSAL):
        multiple_choice.make_swag_task(config)
    assert not (tmp_path / "out").exists()


def test_classification_and_squad_check_it_the_same_way(short_model, tmp_path):
    with pytest.raises(InputError, match=REFUSAL):
        classification.run_classifier(
            ClassifierConfig(
                init_checkpoint=short_model,
                output_dir=str(tmp_path / "glue"),
                task_name="mrpc",
                data_dir=str(_not_data(tmp_path / "train.tsv") and tmp_path),
                max_seq_length=64,
                do_train=True,
            )
        )
    with pytest.raises(InputError, match=REFUSAL):
        question_answering.run_squad(
            question_answering.SquadConfig(
                init_checkpoint=short_model,
                output_dir=str(tmp_path / "squad"),
                max_seq_length=64,
                max_query_length=16,
                doc_stride=16,
                do_train=True,
                train_file=_not_data(tmp_path / "train.json"),
            )
        )
