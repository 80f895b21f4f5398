"""The life cycle with every path on a non-local filesystem, as on a TPU VM with a bucket.

TensorFlow's in-memory ``ram://`` filesystem goes through the same `tf.io.gfile` layer as ``gs://``; it lives in
one process, so the jobs run here through their library entry points (what each script's `main` calls). Each job
runs twice, once with every path in a local folder and once with every path on ``ram://``, and the outputs are
compared: records byte for byte, the same checkpoint values, the same predictions and the same served outputs.
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import json
import os
from unittest import mock

import keras
import numpy as np
import pytest
import tensorflow as tf

from official.nlp.checkpoints import conversion, model_dir
from official.nlp.common import input_files
from official.nlp.common.errors import InputError
from official.nlp.data.pretraining import generator
from official.nlp.serving import exporter
from official.nlp.tasks import classification, feature_extraction, pretraining, pretraining_config
from official.nlp.tokenizers import wordpiece_vocab
from official.nlp.training import checkpointing

_ROOTS = itertools.count()
SEQ = 32


def _put(path: str, data: bytes) -> None:
    tf.io.gfile.makedirs(os.path.dirname(path))
    with tf.io.gfile.GFile(path, "wb") as f:
        f.write(data)


def _get(path: str) -> bytes:
    with tf.io.gfile.GFile(path, "rb") as f:
        return f.read()


def _checkpoint_values(prefix: str) -> dict[str, np.ndarray]:
    reader = tf.compat.v1.train.NewCheckpointReader(prefix)  # a prefix: see tf1_checkpoints.load_checkpoint
    return {name: reader.get_tensor(name) for name in reader.get_variable_to_shape_map() if "OPTIMIZER" not in name}


class _Preempted(Exception):
    pass


@contextlib.contextmanager
def _preempted_after_saving(step: int):
    """The job stops right after committing the checkpoint of `step`, as a preempted TPU VM would."""
    save = checkpointing.CheckpointKeeper.save

    def save_then_stop(self, *args, **kwargs):
        path = save(self, *args, **kwargs)
        if path and path.endswith(f"-{step}"):
            raise _Preempted
        return path

    with mock.patch.object(checkpointing.CheckpointKeeper, "save", save_then_stop):
        yield


def _inputs(root: str, shared_data) -> None:
    """The user's files, placed in `root` before the jobs start: a corpus, MRPC slices, a sentence file."""
    text = (shared_data / "pretraining_golden" / "squad_contexts.txt").read_bytes()
    _put(f"{root}/corpus/a.txt", text[: text.index(b"\n\n", 20000) + 2])
    for name, rows in (("train.tsv", 24), ("dev.tsv", 16), ("test.tsv", 8)):
        lines = (shared_data / "glue" / "MRPC" / name).read_bytes().splitlines(keepends=True)
        _put(f"{root}/mrpc/{name}", b"".join(lines[: rows + 1]))
    _put(f"{root}/sentences.txt", b"The game was played in Santa Clara. ||| It was the 50th Super Bowl.\nGold.\n")


def _life_cycle(root: str) -> dict:
    """Every job with every path under `root`; returns what the two runs are compared on."""
    out = {}
    keras.utils.set_random_seed(7)
    vocab = wordpiece_vocab.build_vocab_file(
        wordpiece_vocab.VocabConfig(
            input_file=f"{root}/corpus/*.txt", output_file=f"{root}/vocab.txt", vocab_size=400, min_count=2
        )
    ).tokens
    out["vocab"] = _get(f"{root}/vocab.txt")
    data = generator.PretrainingDataConfig(
        input_file=f"{root}/corpus/*.txt",
        output_file=f"{root}/records/train.tfrecord@2",
        vocab_file=f"{root}/vocab.txt",
        do_lower_case=True,
        max_seq_length=SEQ,
        max_predictions_per_seq=5,
        dupe_factor=1,
        unit_mb=0.005,
        num_workers=2,  # ram:// is this process's alone: there the units run in-process (same bytes)
    )
    generator.create_pretraining_data(data)
    out["records"] = {os.path.basename(p): _get(p) for p in input_files.glob(f"{root}/records/train.tfrecord-*")}
    config = dict(
        vocab_size=len(vocab),
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=SEQ,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
    )
    _put(f"{root}/bert_config.json", json.dumps(config).encode())
    pretrain = pretraining_config.PretrainingConfig(
        input_file=f"{root}/records/train.tfrecord-*",
        model_dir=f"{root}/pretrain",
        bert_config_file=f"{root}/bert_config.json",
        vocab_file=f"{root}/vocab.txt",
        do_lower_case=True,
        max_seq_length=SEQ,
        max_predictions_per_seq=5,
        train_batch_size=8,
        num_train_steps=4,
        num_warmup_steps=1,
        learning_rate=1e-3,
        steps_per_loop=1,
        save_checkpoints_steps=2,
    )
    with pytest.raises(_Preempted), _preempted_after_saving(step=2):
        pretraining.run_pretraining(pretrain)
    resumed = pretraining.run_pretraining(pretrain)  # the same command resumes at step 2
    out["pretrain_steps"] = [h["step"] for h in resumed.history]
    out["pretrained"] = _checkpoint_values(tf.train.latest_checkpoint(resumed.export_dir))

    conversion.convert_checkpoint(resumed.export_dir, f"{root}/tf1", output_format="tf1")
    out["converted"] = _checkpoint_values(f"{root}/tf1/bert_model.ckpt")

    features = feature_extraction.run_feature_extraction(
        feature_extraction.FeatureExtractionConfig(
            input_file=f"{root}/sentences.txt",
            output_file=f"{root}/features.jsonl",
            init_checkpoint=f"{root}/tf1/bert_model.ckpt",
            layers="-1",
            max_seq_length=SEQ,
        )
    )
    del features
    out["features"] = [json.loads(line) for line in _get(f"{root}/features.jsonl").splitlines()]

    classifier = classification.ClassifierConfig(
        task_name="MRPC",
        data_dir=f"{root}/mrpc",
        init_checkpoint=resumed.export_dir,
        output_dir=f"{root}/mrpc_out",
        do_train=True,
        do_eval=True,
        do_predict=True,
        max_seq_length=SEQ,
        train_batch_size=8,
        eval_batch_size=8,
        num_train_epochs=1,
        learning_rate=1e-3,
        steps_per_loop=1,
    )
    result = classification.run_classifier(classifier)
    # A rerun with other settings is refused on the bucket as on disk, naming the setting.
    with pytest.raises(InputError, match="--learning_rate: 0.001 there, 0.002 now"):
        classification.run_classifier(dataclasses.replace(classifier, learning_rate=2e-3))
    out["eval"] = {k: v for k, v in result.eval_history[-1].items() if not k.endswith("per_second")}
    out["predictions"] = _get(f"{root}/mrpc_out/test_results.tsv")
    out["cache"] = _get(f"{root}/mrpc_out/train.tf_record")

    paths = exporter.export_model("classifier", f"{root}/mrpc_out", f"{root}/serving", keras_file=False, hub_pair=False)
    served = tf.saved_model.load(paths["saved_model"]).signatures["serving_default"]
    outputs = served(
        text_a=tf.constant(["He said the deal was done.", "Gold."]),
        text_b=tf.constant(["The deal was done, he said.", "Silver."]),
    )
    out["served"] = {k: v.numpy() for k, v in outputs.items()}
    out["export_files"] = sorted(
        os.path.relpath(os.path.join(d, n), paths["saved_model"])
        for d, _, names in tf.io.gfile.walk(paths["saved_model"])
        for n in names
    )
    return out


@pytest.mark.slow
def test_every_job_on_ram_matches_the_same_job_on_local_disk(tmp_path, shared_data):
    roots = {"local": str(tmp_path / "local"), "ram": f"ram://life-cycle-{next(_ROOTS)}"}
    results = {}
    for name, root in roots.items():
        _inputs(root, shared_data)
        results[name] = _life_cycle(root)
    local, ram = results["local"], results["ram"]
    assert ram["vocab"] == local["vocab"]
    assert len(local["records"]) == 2 and ram["records"] == local["records"]  # byte for byte
    assert ram["pretrain_steps"] == local["pretrain_steps"] == [3, 4]
    for key in ("pretrained", "converted"):
        assert ram[key].keys() == local[key].keys()
        for name in local[key]:
            np.testing.assert_array_equal(ram[key][name], local[key][name], err_msg=name)
    assert ram["features"] == local["features"]
    assert ram["cache"] == local["cache"] and ram["predictions"] == local["predictions"]
    assert ram["eval"] == local["eval"]
    assert ram["export_files"] == local["export_files"]
    for name in local["served"]:
        np.testing.assert_array_equal(ram["served"][name], local["served"][name], err_msg=name)


def _fine_tuning_jobs(root: str, shared_data) -> dict:
    """SQuAD, CoNLL-2003 NER and SWAG, each trained a few steps and predicting, every path under `root`."""
    from official.nlp.modeling.configs import BertConfig
    from official.nlp.modeling.encoder import BertEncoder
    from official.nlp.tasks import multiple_choice, question_answering, tagging

    squad = json.loads((shared_data / "squad" / "dev-v1.1.json").read_text())
    squad["data"] = [dict(squad["data"][0], paragraphs=squad["data"][0]["paragraphs"][:2])]
    _put(f"{root}/squad.json", json.dumps(squad).encode())
    conll = (shared_data / "conll2003" / "iob2" / "train.txt").read_bytes()
    _put(f"{root}/conll.txt", conll[: conll.index(b"\n\n", 3000) + 2])
    swag = (shared_data / "swag" / "hf_transformers_sample.jsonl").read_bytes().splitlines(keepends=True)
    _put(f"{root}/swag.jsonl", b"".join(swag[:8]))
    keras.utils.set_random_seed(5)
    encoder = BertEncoder.from_bert_config(
        BertConfig(
            vocab_size=30522,
            hidden_size=16,
            num_hidden_layers=1,
            num_attention_heads=2,
            intermediate_size=32,
            max_position_embeddings=64,
        )
    )
    model_dir.save_model_dir(
        f"{root}/model",
        encoder,
        vocab_file=str(shared_data / "vocab" / "bert-base-uncased-vocab.txt"),
        do_lower_case=True,
    )
    shared = dict(
        init_checkpoint=f"{root}/model",
        max_seq_length=SEQ,
        train_batch_size=4,
        num_train_epochs=1,
        learning_rate=1e-3,
        steps_per_loop=1,
    )
    out = {}
    question_answering.run_squad(
        question_answering.SquadConfig(
            train_file=f"{root}/squad.json",
            predict_file=f"{root}/squad.json",
            output_dir=f"{root}/squad_out",
            do_train=True,
            do_predict=True,
            doc_stride=16,
            max_query_length=12,
            **shared,
        )
    )
    out["squad"] = _get(f"{root}/squad_out/predictions.json")
    tagging.run_ner(
        tagging.TaggingConfig(
            train_file=f"{root}/conll.txt",
            predict_file=f"{root}/conll.txt",
            output_dir=f"{root}/ner_out",
            do_train=True,
            do_predict=True,
            **shared,
        )
    )
    out["ner"] = _get(f"{root}/ner_out/{tagging.PREDICTIONS_FILE}")
    multiple_choice.run_swag(
        multiple_choice.MultipleChoiceConfig(
            train_file=f"{root}/swag.jsonl",
            predict_file=f"{root}/swag.jsonl",
            output_dir=f"{root}/swag_out",
            do_train=True,
            do_predict=True,
            **shared,
        )
    )
    out["swag"] = _get(f"{root}/swag_out/{multiple_choice.RESULTS_FILE}")
    return {name: data.replace(root.encode(), b"<root>") for name, data in out.items()}  # SWAG names its input


@pytest.mark.slow
def test_squad_ner_and_swag_on_ram_match_local_disk(tmp_path, shared_data):
    results = [
        _fine_tuning_jobs(root, shared_data) for root in (str(tmp_path / "local"), f"ram://fine-tuning-{next(_ROOTS)}")
    ]
    assert results[0].keys() == results[1].keys() == {"squad", "ner", "swag"}
    for name in results[0]:
        assert results[1][name] == results[0][name], name
