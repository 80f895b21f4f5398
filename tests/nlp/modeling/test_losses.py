import numpy as np

from official.nlp.modeling import losses


def _log_softmax(x):
    x = x - x.max(-1, keepdims=True)
    return x - np.log(np.exp(x).sum(-1, keepdims=True))


def _mlm_loss(labels, logits, weights):
    y = {"masked_lm_ids": labels, "masked_lm_weights": weights}
    return losses.pretraining_losses(y, {"mlm_logits": logits}, use_next_sentence_label=False)["mlm_loss"]


def test_masked_lm_loss_is_weighted_mean_over_real_predictions():
    rng = np.random.default_rng(0)
    logits = rng.normal(size=(2, 3, 5)).astype("float32")
    labels = np.array([[1, 2, 0], [4, 0, 0]], "int32")
    weights = np.array([[1, 1, 0], [1, 0, 0]], "float32")
    ce = -np.take_along_axis(_log_softmax(logits.astype(np.float64)), labels[..., None], -1)[..., 0]
    expected = (ce[0, 0] + ce[0, 1] + ce[1, 0]) / 3
    np.testing.assert_allclose(_mlm_loss(labels, logits, weights), expected, rtol=1e-6)
    # The per-element terms the training loop sums over the global batch.
    np.testing.assert_allclose(losses.cross_entropy(labels, logits), ce, rtol=1e-6)
    y = {"masked_lm_ids": labels, "masked_lm_weights": weights}
    w = losses.pretraining_loss_weights(y, use_next_sentence_label=False)["mlm_loss"]
    element = losses.pretraining_element_losses(y, {"mlm_logits": logits}, use_next_sentence_label=False)["mlm_loss"]
    np.testing.assert_allclose([np.sum(element * w), np.sum(w)], [3 * expected, 3.0], rtol=1e-6)
    # Padding predictions do not count, whatever their logits or labels.
    logits2 = logits.copy()
    logits2[1, 1:] = 50.0
    np.testing.assert_allclose(_mlm_loss(labels, logits2, weights), expected, rtol=1e-6)
    assert float(_mlm_loss(labels, logits, np.zeros_like(weights))) == 0.0

    argmax = logits.argmax(-1)
    correct, count = losses.weighted_accuracy(labels, logits, weights)
    np.testing.assert_allclose([correct, count], [((argmax == labels) * weights).sum(), weights.sum()], rtol=1e-6)
    correct, count = losses.pretraining_metrics(y, {"mlm_logits": logits}, False)["mlm_accuracy"]
    np.testing.assert_allclose(correct / count, ((argmax == labels) * weights).sum() / weights.sum(), rtol=1e-6)


def test_next_sentence_loss_and_total():
    logits = np.array([[2.0, -1.0], [0.5, 0.5], [-3.0, 1.0]], "float32")
    labels = np.array([[0], [1], [1]], "int32")
    expected = -np.mean([_log_softmax(logits.astype(np.float64))[i, labels[i, 0]] for i in range(3)])
    mlm_logits = np.zeros((3, 2, 4), "float32")
    y = {
        "masked_lm_ids": np.zeros((3, 2), "int32"),
        "masked_lm_weights": np.ones((3, 2), "float32"),
        "next_sentence_labels": labels,
    }
    outputs = {"mlm_logits": mlm_logits, "nsp_logits": logits}
    terms = losses.pretraining_losses(y, outputs)
    np.testing.assert_allclose(terms["nsp_loss"], expected, rtol=1e-6)
    # Every example weighs 1; [batch, 1] labels are flattened to the [batch] of the logits.
    np.testing.assert_array_equal(losses.pretraining_loss_weights(y)["nsp_loss"], np.ones(3, "float32"))
    assert tuple(losses.pretraining_element_losses(y, outputs)["nsp_loss"].shape) == (3,)
    # The tie [0.5, 0.5] predicts class 0 (arg-max takes the first), so 2 of 3 are right.
    correct, count = losses.pretraining_metrics(y, outputs)["nsp_accuracy"]
    np.testing.assert_allclose([correct, count], [2.0, 3.0], rtol=1e-6)

    np.testing.assert_allclose(terms["mlm_loss"], np.log(4), rtol=1e-6)
    np.testing.assert_allclose(terms["loss"], np.log(4) + expected, rtol=1e-6)
    assert set(losses.pretraining_losses(y, {"mlm_logits": mlm_logits}, False)) == {"loss", "mlm_loss"}


def test_missing_labels_are_named():
    import pytest

    with pytest.raises(KeyError, match="next_sentence_labels"):
        losses.pretraining_losses({"masked_lm_ids": 0, "masked_lm_weights": 0}, {})
