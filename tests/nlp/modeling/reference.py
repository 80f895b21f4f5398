"""A float64 NumPy transcription of the original BERT forward pass (google-research/bert modeling.py).

Independent of Keras: it reads our layers' variables by their role and recomputes every step, so the tests
can compare the Keras graph against the algorithm rather than against itself.
"""

import math

import numpy as np


def gelu_tanh(x):
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))


def gelu_erf(x):
    erf = np.vectorize(math.erf)
    return 0.5 * x * (1.0 + erf(x / math.sqrt(2.0)))


ACTIVATIONS = {
    "gelu": gelu_tanh,
    "gelu_exact": gelu_erf,
    "relu": lambda x: np.maximum(x, 0),
    "tanh": np.tanh,
    "linear": lambda x: x,
}


def layer_norm(x, gamma, beta, eps):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * gamma + beta


def _np(v):
    return np.asarray(v, np.float64)


def dense(x, layer):
    return x @ _np(layer.kernel) + _np(layer.bias)


def block(x, mask, block_layer, num_heads, act, eps, causal=False):
    b, s, h = x.shape
    d = h // num_heads
    att = block_layer.attention

    def heads(t):
        return t.reshape(b, s, num_heads, d).transpose(0, 2, 1, 3)

    q, k, v = heads(dense(x, att.query)), heads(dense(x, att.key)), heads(dense(x, att.value))
    scores = q @ k.transpose(0, 1, 3, 2) / math.sqrt(d)
    allowed = mask[:, None, None, :] * (np.tril(np.ones((s, s))) if causal else 1.0)  # causal: key <= query
    scores = scores + (1.0 - allowed) * -10000.0
    probs = np.exp(scores - scores.max(-1, keepdims=True))
    probs /= probs.sum(-1, keepdims=True)
    context = (probs @ v).transpose(0, 2, 1, 3).reshape(b, s, h)
    ln1 = block_layer.attention_layer_norm
    x = layer_norm(x + dense(context, block_layer.attention_output_dense), _np(ln1.gamma), _np(ln1.beta), eps)
    inter = ACTIVATIONS[act](dense(x, block_layer.intermediate_dense))
    ln2 = block_layer.output_layer_norm
    return layer_norm(x + dense(inter, block_layer.output_dense), _np(ln2.gamma), _np(ln2.beta), eps)


def embeddings(ids, types, emb, eps):
    s = ids.shape[1]
    x = _np(emb.word_embeddings.embeddings)[ids] + _np(emb.token_type_embeddings.embeddings)[types]
    x = x + _np(emb.position_embeddings)[:s][None]
    return layer_norm(x, _np(emb.layer_norm.gamma), _np(emb.layer_norm.beta), eps)


def encoder(enc, ids, mask, types):
    """Returns (list of layer outputs, pooled output) for a `BertEncoder`. A left-to-right encoder attends to the
    positions up to the current one, and pools its last real token."""
    config = enc.config
    causal = config.attention == "left_to_right"
    x = embeddings(ids, types, enc.embeddings, config.layer_norm_eps)
    outputs = []
    for layer in enc.transformer_layers:
        x = block(
            x,
            mask.astype(np.float64),
            layer,
            config.num_attention_heads,
            config.hidden_act,
            config.layer_norm_eps,
            causal=causal,
        )
        outputs.append(x)
    pooled_row = x[np.arange(len(x)), mask.sum(1) - 1] if causal else x[:, 0]
    pooled = np.tanh(dense(pooled_row, enc.pooler))
    return outputs, pooled
