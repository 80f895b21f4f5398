"""Model Garden TF2 checkpoints both ways, against the Model Garden's own code: the fixtures in data/model_garden/
were written by tf-models-official 2.20 (its BertEncoder, its pretraining and sentence-prediction tasks and its
Trainer; make_fixtures.py), with its forward pass on fixed inputs. Ours must give the same outputs, and what we write
must have the variable keys and shapes of its checkpoints. That the Model Garden loads what we write back is checked
with its own code by data/model_garden/check_round_trip.py, which needs tf-models-official (not installed here)."""

from __future__ import annotations

import json
import pathlib
import shutil

import numpy as np
import pytest
import tensorflow as tf

from official.nlp.checkpoints import conversion, fine_tuned, head_kinds, model_loading
from official.nlp.checkpoints.checkpoint_base import CheckpointMismatchError
from official.nlp.checkpoints.peers import model_garden, model_garden_export
from official.nlp.common.errors import InputError
from official.nlp.modeling.encoder import BertEncoder
from official.nlp.modeling.models import BertClassifier, BertPretrainer
from tests.run_scripts.script_runs import assert_user_error, run_in_one_process

DATA = pathlib.Path(__file__).parent / "data" / "model_garden"
EXPECTED = dict(np.load(DATA / "outputs.npz"))
INPUTS = {name: EXPECTED[name] for name in ("input_word_ids", "input_mask", "input_type_ids")}
ENCODER = str(DATA / "encoder" / "bert_model.ckpt-1")
PRETRAINER = str(DATA / "pretrainer" / "ckpt-1")
CLASSIFIER = str(DATA / "classifier" / "ckpt-1")
VOCAB = str(DATA / "encoder" / "vocab.txt")
FILES = dict(vocab_file=VOCAB, do_lower_case=True)  # a training run's folder holds neither
_TRAINING_STATE = ("global_step/", "optimizer/", "_CHECKPOINTABLE_OBJECT_GRAPH")


def _layout(prefix: str) -> dict[str, list[int]]:
    """Variable keys and shapes of a checkpoint, training state (step, optimizer and its slots) left out; `save_counter`
    stays, which the Model Garden's export_tfhub asks for."""
    shapes = tf.train.load_checkpoint(prefix).get_variable_to_shape_map()
    return {k: v for k, v in shapes.items() if not k.startswith(_TRAINING_STATE) and ".OPTIMIZER_SLOT" not in k}


def _close(ours, name: str) -> None:
    np.testing.assert_allclose(np.asarray(ours), EXPECTED[name], atol=1e-5, rtol=0, err_msg=name)


def _check_encoder(encoder: BertEncoder, prefix: str = "encoder", pooled: str = "encoder_pooled_output") -> None:
    out = encoder(INPUTS, training=False)
    _close(out["sequence_output"], f"{prefix}_sequence_output")
    _close(out["pooled_output"], pooled)


def _check_pretrainer(model: BertPretrainer) -> None:
    out = model(dict(INPUTS, masked_lm_positions=EXPECTED["masked_lm_positions"]), training=False)
    _close(out["mlm_logits"], "pretrainer_mlm_logits")
    _close(out["nsp_logits"], "pretrainer_next_sentence")
    # The pooler is the next-sentence head's own (what export_tfhub --copy_pooler_dense_to_encoder gives).
    _check_encoder(model.encoder, "pretrainer", "pretrainer_head_pooled_output")


def _check_classifier(model: BertClassifier) -> None:
    _close(model(INPUTS, training=False), "classifier_logits")
    _close(model.encoder(INPUTS, training=False)["sequence_output"], "classifier_sequence_output")


def test_the_encoder_checkpoint_gives_the_model_gardens_outputs():
    files = model_loading.read_model_files(str(DATA / "encoder"), do_lower_case=True)
    assert (files.checkpoint, files.checkpoint_format) == (ENCODER, "model_garden")
    _check_encoder(files.build_encoder())
    model, _ = model_loading.load_model(ENCODER, do_lower_case=True)
    assert isinstance(model, BertEncoder)
    _check_encoder(model)


def test_a_pretraining_run_gives_its_masked_lm_and_next_sentence_outputs():
    files = model_loading.read_model_files(str(DATA / "pretrainer"), **FILES)
    assert (files.checkpoint, files.checkpoint_format) == (PRETRAINER, "model_garden")
    # No bert_config.json in a run's folder: the sizes come from the shapes, the rest from the Model Garden's defaults.
    assert files.config == model_loading.read_model_files(ENCODER, do_lower_case=True).config
    model, _ = model_loading.load_model(PRETRAINER, **FILES)
    assert isinstance(model, BertPretrainer) and model.use_next_sentence_label
    _check_pretrainer(model)
    # What run_pretraining --init_checkpoint does: the heads come too.
    again = BertPretrainer(BertEncoder.from_bert_config(files.config))
    files.restore(again)
    _check_pretrainer(again)


def test_a_classifier_run_converts_with_its_head(tmp_path):
    conversion.convert(conversion.ConversionConfig(input=CLASSIFIER, output_dir=str(tmp_path / "ours"), **FILES))
    described, model = fine_tuned.load_fine_tuned(str(tmp_path / "ours"))
    assert described.head.name == head_kinds.CLASSIFIER and described.labels == ["0", "1", "2"]
    _check_classifier(model)
    # Its encoder alone, as --init_checkpoint takes it: the pooler is the classifier head's.
    encoder = model_loading.read_model_files(CLASSIFIER, **FILES).build_encoder()
    _close(encoder(INPUTS, training=False)["sequence_output"], "classifier_sequence_output")


def test_a_classifier_on_the_encoders_pooler_converts_both_ways(tmp_path):
    """use_encoder_pooler=True: the head is the logits alone, on the encoder's own pooler."""
    source = str(DATA / "classifier_encoder_pooler")
    described, model = fine_tuned.load_fine_tuned(source, **FILES)
    assert described.labels == ["0", "1"]
    _close(model(INPUTS, training=False), "classifier_encoder_pooler_logits")
    back = tmp_path / "back"
    conversion.convert(
        conversion.ConversionConfig(input=source, output_dir=str(back), output_format="model_garden", **FILES)
    )
    # Written in the task's default form (the head's own pooler, a copy of the encoder's): the same logits.
    assert set(_layout(str(back / "bert_model.ckpt"))) == set(_layout(CLASSIFIER))
    _close(fine_tuned.load_fine_tuned(str(back))[1](INPUTS, training=False), "classifier_encoder_pooler_logits")


@pytest.mark.parametrize("source", [ENCODER, PRETRAINER, CLASSIFIER], ids=["encoder", "pretrainer", "classifier"])
def test_written_checkpoints_have_the_model_gardens_layout_and_read_back(source, tmp_path):
    """Model Garden -> ours -> Model Garden: the keys and shapes its training wrote, and the same outputs."""
    ours, back = tmp_path / "ours", tmp_path / "back"
    conversion.convert(conversion.ConversionConfig(input=source, output_dir=str(ours), **FILES))
    conversion.convert(conversion.ConversionConfig(input=str(ours), output_dir=str(back), output_format="model_garden"))
    written = str(back / "bert_model.ckpt")
    assert _layout(written) == _layout(source)
    assert sorted(p.name for p in back.iterdir()) == [
        "bert_config.json", "bert_model.ckpt.data-00000-of-00001", "bert_model.ckpt.index", "do_lower_case",
        "vocab.txt",
    ]  # fmt: skip
    assert model_loading.detect_format(str(back)) == "model_garden"
    if source == ENCODER:
        _check_encoder(model_loading.read_model_files(str(back)).build_encoder())
    elif source == PRETRAINER:
        _check_pretrainer(model_loading.load_model(str(back))[0])
    else:
        _check_classifier(fine_tuned.load_fine_tuned(str(back))[1])


def _config_file(tmp_path, **changes) -> str:
    config = json.loads((DATA / "encoder" / "bert_config.json").read_text())
    path = tmp_path / f"bert_config_{len(list(tmp_path.iterdir()))}.json"
    path.write_text(json.dumps({**config, **changes}))
    return str(path)


def test_bad_model_garden_checkpoints_are_one_message_each(tmp_path):
    with pytest.raises(
        InputError, match=r"albert/bert_model.ckpt-1: its encoder is not a Model Garden BertEncoder"
    ) as e:
        model_loading.load_model(str(DATA / "albert" / "bert_model.ckpt-1"), **FILES)
    assert "\n" not in str(e.value)
    with pytest.raises(InputError, match=r"says num_attention_heads=2, and .* have 4 heads") as e:
        model_loading.read_model_files(ENCODER, bert_config_file=_config_file(tmp_path, num_attention_heads=2), **FILES)
    assert "\n" not in str(e.value)
    with pytest.raises(CheckpointMismatchError, match="wrong shape") as e:
        model_loading.load_model(ENCODER, bert_config_file=_config_file(tmp_path, intermediate_size=48), **FILES)
    assert "bert/encoder/layer_0/intermediate/dense/kernel: checkpoint [32, 64], model [32, 48]" in str(e.value)
    # A checkpoint without a variable (a block's output layer norm's gamma).
    model, _ = model_loading.load_model(ENCODER, do_lower_case=True)
    roots = model_garden_export.checkpoint_roots(model)
    del roots["encoder"]._transformer_layers[1]._output_layer_norm.gamma
    partial = str(tmp_path / "partial" / "bert_model.ckpt")
    tf.train.Checkpoint(**roots).write(partial)
    shutil.copy(VOCAB, tmp_path / "partial" / "vocab.txt")
    with pytest.raises(InputError, match=r"has no encoder/_transformer_layers/1/_output_layer_norm/gamma") as e:
        model_loading.read_model_files(partial, do_lower_case=True)
    assert "\n" not in str(e.value)
    # Our own checkpoints have an `encoder` too, and are not taken for the Model Garden's.
    ours = tmp_path / "ours"
    conversion.convert(conversion.ConversionConfig(input=ENCODER, output_dir=str(ours), do_lower_case=True))
    assert model_loading.detect_format(str(ours)) == "ours"
    assert not model_garden.is_model_garden_checkpoint(tf.train.latest_checkpoint(str(ours)))


def test_fine_tuning_starts_from_a_model_garden_checkpoint(shared_data, tmp_path):
    """run_classifier --init_checkpoint=<Model Garden checkpoint>, as from a TF1 one: one step at a learning rate too
    small to move the weights, so its encoder is still the Model Garden's."""
    from official.nlp.tasks import classification

    data = tmp_path / "mrpc"
    data.mkdir()
    for name, rows in (("train.tsv", 16), ("dev.tsv", 8)):
        lines = (shared_data / "glue" / "MRPC" / name).read_text(encoding="utf-8").splitlines(keepends=True)
        (data / name).write_text("".join(lines[: rows + 1]), encoding="utf-8")
    result = classification.run_classifier(
        classification.ClassifierConfig(
            task_name="mrpc", data_dir=str(data), init_checkpoint=ENCODER, output_dir=str(tmp_path / "out"),
            do_lower_case=True, max_seq_length=16, train_batch_size=16, num_train_epochs=1, learning_rate=1e-12,
            do_train=True,
        )
    )  # fmt: skip
    out = result.model.encoder(INPUTS, training=False)
    np.testing.assert_allclose(out["sequence_output"], EXPECTED["encoder_sequence_output"], atol=1e-4)


@pytest.mark.slow
def test_convert_checkpoint_reads_and_writes_the_model_garden_format(tmp_path):
    """Both runs of convert_checkpoint.py in one process (TensorFlow is imported once)."""
    back = tmp_path / "back"
    results = run_in_one_process(
        {
            "written": ("convert_checkpoint.py", [
                f"--input={DATA / 'pretrainer'}", f"--output_dir={back}", f"--vocab_file={VOCAB}",
                "--do_lower_case=true", "--output_format=model_garden",
            ]),
            "albert": ("convert_checkpoint.py", [f"--input={DATA / 'albert'}", f"--output_dir={tmp_path / 'o'}"]),
        }
    )  # fmt: skip
    assert results["written"].returncode == 0, results["written"].stderr[-3000:]
    assert _layout(str(back / "bert_model.ckpt")) == _layout(PRETRAINER)
    assert_user_error(
        results["albert"], "its encoder is not a Model Garden BertEncoder", "only BertEncoder checkpoints"
    )
    assert not (tmp_path / "o").exists()
