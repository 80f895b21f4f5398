"""Loads checkpoints this library wrote (`convert_checkpoint.py --output_format=model_garden`) back into the Model
Garden's own models, the ways the Model Garden restores them, and compares its forward pass with `outputs.npz`.

Run from a folder outside any checkout, with tf-models-official installed (see make_fixtures.py):

    cd /tmp && /work/mg_venv/bin/python <this file> --encoder=<dir>/bert_model.ckpt \
        --pretrainer=<dir>/bert_model.ckpt --classifier=<dir>/bert_model.ckpt \
        --classifier_encoder_pooler=<dir>/bert_model.ckpt

With the trainer's root, each one is restored with `assert_consumed()` too, so a variable we write that the Model
Garden does not have fails.
"""

import argparse
import os
import sys
import tempfile

import numpy as np
import tensorflow as tf

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import make_fixtures as fixtures  # noqa: E402
from official.nlp.configs import bert, encoders  # noqa: E402
from official.nlp.tools import export_tfhub_lib  # noqa: E402

from official.nlp.data import pretrain_dataloader, sentence_prediction_dataloader  # noqa: E402
from official.nlp.modeling import networks  # noqa: E402
from official.nlp.tasks import masked_lm, sentence_prediction  # noqa: E402


def report(name: str, ours: np.ndarray, expected: np.ndarray) -> float:
    error = float(np.abs(np.asarray(ours) - expected).max())
    print(f"{name}: max |difference| {error:.2e}", "OK" if error < 1e-5 else "FAIL")
    return error


def main() -> None:
    parser = argparse.ArgumentParser()
    for name in ("encoder", "pretrainer", "classifier", "classifier_encoder_pooler"):
        parser.add_argument(f"--{name}")
    args = parser.parse_args()
    expected = np.load(os.path.join(HERE, "outputs.npz"))
    inputs = fixtures.INPUTS
    errors = []
    if args.encoder:
        encoder = encoders.build_encoder(fixtures.encoder_config())
        encoder(inputs)
        # As the sentence-prediction task's init_checkpoint and export_tfhub restore an encoder.
        tf.train.Checkpoint(encoder=encoder).restore(args.encoder).assert_consumed()
        out = encoder(inputs, training=False)
        errors.append(report("encoder sequence_output", out["sequence_output"], expected["encoder_sequence_output"]))
        errors.append(report("encoder pooled_output", out["pooled_output"], expected["encoder_pooled_output"]))
        # Its other encoder class (encoder type bert_v2), a Keras layer, restores through the attribute names.
        config = fixtures.encoder_config()
        config.type, config.bert_v2 = "bert_v2", config.bert
        encoder = encoders.build_encoder(config)
        assert type(encoder) is networks.BertEncoderV2, type(encoder)
        encoder(inputs)
        tf.train.Checkpoint(encoder=encoder).restore(args.encoder).assert_existing_objects_matched()
        out = encoder(inputs, training=False)
        errors.append(
            report("BertEncoderV2 sequence_output", out["sequence_output"], expected["encoder_sequence_output"])
        )
        errors.append(report("BertEncoderV2 pooled_output", out["pooled_output"], expected["encoder_pooled_output"]))
    if args.pretrainer:
        config = masked_lm.MaskedLMConfig(
            model=bert.PretrainerConfig(
                encoder=fixtures.encoder_config(),
                cls_heads=[bert.ClsHeadConfig(inner_dim=fixtures.HIDDEN, num_classes=2, name="next_sentence")],
            ),
            train_data=pretrain_dataloader.BertPretrainDataConfig(use_next_sentence_label=True),
        )
        features = dict(inputs, masked_lm_positions=fixtures.POSITIONS_TO_PREDICT)
        # As its trainer (model + checkpoint_items), export_tfhub (checkpoint_items) and a user (model) restore it.
        for root in ("trainer", "checkpoint_items", "model"):
            pretrainer = masked_lm.MaskedLMTask(config).build_model()
            pretrainer(features)
            items = {"model": pretrainer} if root != "checkpoint_items" else {}
            items.update(pretrainer.checkpoint_items if root != "model" else {})
            status = tf.train.Checkpoint(**items).restore(args.pretrainer)
            status.assert_existing_objects_matched()
            if root == "trainer":
                status.assert_consumed()
            out = pretrainer(features, training=False)
            errors.append(
                report(f"pretrainer ({root}) mlm_logits", out["mlm_logits"], expected["pretrainer_mlm_logits"])
            )
            if root != "checkpoint_items":  # they hold the head's pooler, not its out_proj (under `model`)
                errors.append(
                    report(
                        f"pretrainer ({root}) next_sentence", out["next_sentence"], expected["pretrainer_next_sentence"]
                    )
                )
            sequence = pretrainer.encoder_network(inputs, training=False)
            errors.append(
                report(
                    f"pretrainer ({root}) sequence_output",
                    sequence["sequence_output"],
                    expected["pretrainer_sequence_output"],
                )
            )
            # The encoder's own pooler is the next-sentence head's pooler, written both places.
            errors.append(
                report(
                    f"pretrainer ({root}) encoder pooled_output",
                    sequence["pooled_output"],
                    expected["pretrainer_head_pooled_output"],
                )
            )
        # Its export_tfhub, with the masked LM, on the checkpoint (TF-Hub SavedModel: the encoder and its `mlm`).
        with tempfile.TemporaryDirectory() as folder:
            export_tfhub_lib.export_model(
                os.path.join(folder, "hub"),
                encoder_config=fixtures.encoder_config(),
                model_checkpoint_path=args.pretrainer,
                with_mlm=True,
                vocab_file=os.path.join(HERE, "encoder", "vocab.txt"),
                do_lower_case=True,
            )
            hub = tf.saved_model.load(os.path.join(folder, "hub"))
            out = hub(inputs, training=False)
            errors.append(
                report("export_tfhub sequence_output", out["sequence_output"], expected["pretrainer_sequence_output"])
            )
            out = hub.mlm(features, training=False)
            errors.append(report("export_tfhub mlm_logits", out["mlm_logits"], expected["pretrainer_mlm_logits"]))
    if args.classifier:
        config = sentence_prediction.SentencePredictionConfig(
            model=sentence_prediction.ModelConfig(num_classes=3, encoder=fixtures.encoder_config()),
            train_data=sentence_prediction_dataloader.SentencePredictionDataConfig(),
        )
        classifier = sentence_prediction.SentencePredictionTask(config).build_model()
        classifier(inputs)
        checkpoint = tf.train.Checkpoint(model=classifier, **classifier.checkpoint_items)
        checkpoint.restore(args.classifier).assert_consumed()
        errors.append(report("classifier logits", classifier(inputs, training=False), expected["classifier_logits"]))
    if args.classifier_encoder_pooler:  # the written default form, restored into a use_encoder_pooler=True model
        config = sentence_prediction.SentencePredictionConfig(
            model=sentence_prediction.ModelConfig(
                num_classes=2, use_encoder_pooler=True, encoder=fixtures.encoder_config()
            ),
            train_data=sentence_prediction_dataloader.SentencePredictionDataConfig(),
        )
        classifier = sentence_prediction.SentencePredictionTask(config).build_model()
        classifier(inputs)
        checkpoint = tf.train.Checkpoint(model=classifier, **classifier.checkpoint_items)
        checkpoint.restore(args.classifier_encoder_pooler).assert_existing_objects_matched()
        errors.append(
            report(
                "classifier (use_encoder_pooler) logits",
                classifier(inputs, training=False),
                expected["classifier_encoder_pooler_logits"],
            )
        )
    if not errors or max(errors) >= 1e-5:
        sys.exit("FAILED")
    print(f"all {len(errors)} outputs match (max |difference| {max(errors):.2e})")


if __name__ == "__main__":
    main()
