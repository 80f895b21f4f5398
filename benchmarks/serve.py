"""`--what=serve`: raw-text requests/s of the exported classifier at batch 1 and 32, ours against keras-hub.

Both are SavedModels with one signature, strings in and logits out, timed the same way by
`serving_rate.run_fresh` (a fresh interpreter that imports only TensorFlow): ours is
`serving.exporter.build_export("classifier", ...)` around `BertClassifier` on the all-MiniLM-L6-v2 weights;
keras-hub's is its `BertTextClassifierPreprocessor` + `BertTextClassifier` (same sizes, same vocabulary,
`sequence_length` the same) in a `tf.Module`. The requests are real SST-2 sentences.
"""

from __future__ import annotations

import dataclasses
import json
import os
import tempfile

from benchmarks import finetune, timing
from official.nlp.common import text_files


@dataclasses.dataclass(frozen=True)
class ServeConfig:
    data_dir: str
    hf_model_dir: str
    max_seq_length: int = 128
    batch_sizes: tuple[int, ...] = (1, 32)
    seconds: float = 10.0
    num_requests: int = 512


def _export_ours(config: ServeConfig, target: str) -> str:
    from official.nlp.checkpoints import model_loading
    from official.nlp.modeling.models import BertClassifier
    from official.nlp.serving import exporter

    files = model_loading.read_model_files(config.hf_model_dir)
    model = BertClassifier(files.build_encoder(), num_classes=2)
    module = exporter.build_export(
        "classifier",
        model,
        vocab_file=files.vocab_file,
        do_lower_case=files.do_lower_case,
        max_seq_length=config.max_seq_length,
        label_names=("0", "1"),
    )
    return module.save(target, token_ids_model=False)


def _export_keras_hub(config: ServeConfig, target: str) -> str:
    import keras_hub
    import tensorflow as tf

    hf = json.loads(text_files.read_text(os.path.join(config.hf_model_dir, "config.json")))
    tokenizer = keras_hub.models.BertTokenizer(
        vocabulary=os.path.join(config.hf_model_dir, "vocab.txt"), lowercase=True
    )
    preprocessor = keras_hub.models.BertTextClassifierPreprocessor(tokenizer, sequence_length=config.max_seq_length)
    backbone = keras_hub.models.BertBackbone(
        vocabulary_size=hf["vocab_size"],
        num_layers=hf["num_hidden_layers"],
        num_heads=hf["num_attention_heads"],
        hidden_dim=hf["hidden_size"],
        intermediate_dim=hf["intermediate_size"],
    )
    classifier = keras_hub.models.BertTextClassifier(backbone, num_classes=2, preprocessor=None)

    module = tf.Module()
    module.classifier, module.preprocessor = classifier, preprocessor

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="text_a")])
    def serve(text_a):
        return {"logits": classifier(preprocessor(text_a), training=False)}

    module.serve = serve
    path = os.path.join(target, "1")
    tf.saved_model.save(module, path, signatures={"serving_default": serve})
    return path


def run(config: ServeConfig) -> dict[str, timing.Rate]:
    from benchmarks import serving_rate

    sentences, _ = finetune.read_sst2(config.data_dir, config.num_requests)
    measured = {}
    with tempfile.TemporaryDirectory() as work:
        for name, export in (("ours", _export_ours), ("keras-hub", _export_keras_hub)):
            path = export(config, os.path.join(work, name))
            measured[name] = serving_rate.run_fresh(
                path, sentences, batch_sizes=config.batch_sizes, seconds=config.seconds
            )
    results = {}
    for batch in config.batch_sizes:
        rates = {
            name: timing.Rate(name, [per_batch[batch] * batch], [per_batch[batch] * batch])
            for name, per_batch in measured.items()
        }
        print(
            f"\n## serving raw text, batch {batch}, max_seq_length {config.max_seq_length}\n$ {timing.command_line()}"
        )
        for name, rate in rates.items():
            print(
                f"  {name:<28} {rate.median / batch:9.4g} requests/s ({rate.median:.4g} texts/s)  "
                f"{rate.median / rates['keras-hub'].median:5.2f}x keras-hub"
            )
        results.update({f"batch{batch}/{name}": rate for name, rate in rates.items()})
    return results
