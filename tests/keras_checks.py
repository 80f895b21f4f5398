"""Shared checks that every layer and model of the library passes the same way (keras-hub style).

`check_layer` builds a layer, calls it, round-trips its config, saves and loads it as `.keras` inside a
functional wrapper (outputs must be identical) and runs it under `mixed_bfloat16` and `mixed_float16`
(variables stay float32, outputs finite, and float32 where the layer promises it).
`check_model` does the same for a functional model built by a factory.
"""

from __future__ import annotations

import pathlib
from collections.abc import Callable
from typing import Any

import keras
import numpy as np

MIXED_POLICIES = ("mixed_bfloat16", "mixed_float16")


def _flat(x) -> list[np.ndarray]:
    return [np.asarray(v) for v in keras.tree.flatten(x)]


def _assert_same(a, b, atol=0.0):
    flat_a, flat_b = _flat(a), _flat(b)
    assert len(flat_a) == len(flat_b)
    for x, y in zip(flat_a, flat_b):
        assert x.shape == y.shape
        np.testing.assert_allclose(x, y, atol=atol, rtol=0)


def _symbolic(value: np.ndarray, name: str) -> keras.KerasTensor:
    return keras.Input(shape=value.shape[1:], batch_size=None, dtype=str(value.dtype), name=name)


def check_layer(
    layer_cls: type,
    init_kwargs: dict[str, Any],
    call_args: tuple = (),
    call_kwargs: dict[str, np.ndarray] | None = None,
    *,
    expected_output_shape=None,
    float32_output_under_mixed: bool = False,
    tmp_path: pathlib.Path,
):
    """Runs the standard layer checks; returns the float32 output for further assertions."""
    call_kwargs = call_kwargs or {}
    layer = layer_cls(**init_kwargs)
    output = layer(*call_args, **call_kwargs)
    if expected_output_shape is not None:
        shapes = keras.tree.map_structure(lambda t: tuple(t.shape), output)
        assert shapes == expected_output_shape
    assert all(np.isfinite(v).all() for v in _flat(output))

    # Config round trip: every constructor argument is in get_config.
    config = layer.get_config()
    clone = layer_cls.from_config(config)
    assert clone.get_config() == config
    revived = keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(layer))
    assert type(revived) is layer_cls and revived.get_config() == config

    # .keras save/load inside a functional wrapper, outputs identical (inference mode).
    sym_args = [_symbolic(v, f"arg{i}") for i, v in enumerate(call_args)]
    sym_kwargs = {k: _symbolic(v, k) for k, v in call_kwargs.items()}
    wrapper = keras.Model(sym_args + list(sym_kwargs.values()), layer(*sym_args, **sym_kwargs))
    feed = list(call_args) + list(call_kwargs.values())
    path = tmp_path / f"{layer_cls.__name__}.keras"
    wrapper.save(path)
    loaded = keras.saving.load_model(path)
    _assert_same(wrapper(feed), loaded(feed))

    # Mixed precision: float32 variables, finite outputs close to float32.
    for policy in MIXED_POLICIES:
        mixed = layer_cls(**init_kwargs, dtype=policy)
        mixed_output = mixed(*call_args, **call_kwargs)
        assert all(v.dtype == "float32" for v in mixed.weights), policy
        for value in keras.tree.flatten(mixed_output):
            if float32_output_under_mixed:
                assert keras.backend.standardize_dtype(value.dtype) == "float32", policy
            assert np.isfinite(np.asarray(value, np.float32)).all(), policy
    return output


def check_model(
    factory: Callable[..., keras.Model],
    inputs: dict[str, np.ndarray],
    *,
    expected_output_shape=None,
    tmp_path: pathlib.Path,
    labels=None,
    loss=None,
    unused_weights: tuple[str, ...] = (),
):
    """Standard checks for a model `factory(dtype=None|policy)`: config, `.keras`, mixed precision, `fit`.

    With `labels`, two epochs of `fit` must change every trainable variable except those whose path starts
    with one of `unused_weights` (e.g. the pooler of a token-level model gets no gradient).
    """
    model = factory()
    output = model.predict(inputs, verbose=0)
    if expected_output_shape is not None:
        assert keras.tree.map_structure(lambda t: tuple(t.shape), output) == expected_output_shape
    for value in keras.tree.flatten(output):
        assert value.dtype == np.float32 and np.isfinite(value).all()

    config = model.get_config()
    clone = type(model).from_config(config)
    assert clone.get_config() == config
    assert len(clone.weights) == len(model.weights)

    path = tmp_path / f"{type(model).__name__}.keras"
    model.save(path)
    loaded = keras.saving.load_model(path)
    assert type(loaded) is type(model)
    _assert_same(output, loaded.predict(inputs, verbose=0))

    for policy in MIXED_POLICIES:
        mixed = factory(dtype=policy)
        for value in keras.tree.flatten(mixed.predict(inputs, verbose=0)):
            assert value.dtype == np.float32 and np.isfinite(value).all(), policy
        assert all(w.dtype == "float32" for w in mixed.weights), policy

    if labels is not None:
        if loss is None:
            model.compile(optimizer=keras.optimizers.Adam(1e-3))
        else:
            model.compile(optimizer=keras.optimizers.Adam(1e-3), loss=loss)
        before = [w.numpy().copy() for w in model.trainable_weights]
        history = model.fit(inputs, labels, epochs=2, batch_size=len(next(iter(inputs.values()))), verbose=0)
        assert all(np.isfinite(v).all() for v in history.history["loss"])
        unchanged = [
            w.path
            for b, w in zip(before, model.trainable_weights)
            if np.array_equal(b, w.numpy()) and not w.path.startswith(unused_weights)
        ]
        assert not unchanged, f"fit left trainable weights unchanged: {unchanged}"
        return model, history
    return model, None
