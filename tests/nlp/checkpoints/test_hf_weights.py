import numpy as np
import pytest

from official.nlp.checkpoints import hf_weights, tf1_checkpoints
from official.nlp.modeling.models import BertPretrainer
from tests.nlp.checkpoints.test_tf1_checkpoints import _pretrainer, _pretraining_inputs


def test_safetensors_reader(tmp_path):
    import safetensors.numpy

    tensors = {
        "a": np.arange(6, dtype=np.float32).reshape(2, 3),
        "b": np.array([1, 2], np.int64),
        "c": np.array([[0.5, -2.0]], np.float16),
    }
    safetensors.numpy.save_file(tensors, str(tmp_path / "x.safetensors"))
    read = hf_weights.load_safetensors(str(tmp_path / "x.safetensors"))
    assert set(read) == set(tensors)
    for key in tensors:
        assert read[key].dtype == tensors[key].dtype
        np.testing.assert_array_equal(read[key], tensors[key])
        assert not read[key].flags.writeable  # views of the file's bytes: writing fails instead of corrupting

    # bfloat16 (which NumPy lacks) becomes float32: write the raw format by hand.
    import json
    import struct

    values = np.array([1.0, -2.5, 3.140625], np.float32)
    raw = (values.view(np.uint32) >> 16).astype("<u2").tobytes()
    header = json.dumps({"w": {"dtype": "BF16", "shape": [3], "data_offsets": [0, len(raw)]}}).encode()
    (tmp_path / "bf16.safetensors").write_bytes(struct.pack("<Q", len(header)) + header + raw)
    np.testing.assert_array_equal(hf_weights.load_safetensors(str(tmp_path / "bf16.safetensors"))["w"], values)


def _hf_bert_names(num_layers):
    """The weight names of transformers' `BertForPreTraining` (without the `bert.` prefix), written out by hand."""
    names = [f"embeddings.{kind}_embeddings.weight" for kind in ("word", "position", "token_type")]
    names += ["embeddings.LayerNorm.weight", "embeddings.LayerNorm.bias"]
    for i in range(num_layers):
        for module in (
            "attention.self.query",
            "attention.self.key",
            "attention.self.value",
            "attention.output.dense",
            "attention.output.LayerNorm",
            "intermediate.dense",
            "output.dense",
            "output.LayerNorm",
        ):
            names += [f"encoder.layer.{i}.{module}.weight", f"encoder.layer.{i}.{module}.bias"]
    names += [
        "pooler.dense.weight",
        "pooler.dense.bias",
        "cls.predictions.bias",
        "cls.predictions.transform.dense.weight",
        "cls.predictions.transform.dense.bias",
        "cls.predictions.transform.LayerNorm.weight",
        "cls.predictions.transform.LayerNorm.bias",
        "cls.seq_relationship.weight",
        "cls.seq_relationship.bias",
    ]
    return names


def test_hugging_face_names_map_onto_every_tf1_variable():
    model = _pretrainer()
    variables = tf1_checkpoints.tf1_variable_map(model.encoder, model.masked_lm, model.next_sentence)
    hf_names = _hf_bert_names(model.encoder.config.num_hidden_layers)
    mapped = {name: hf_weights.hf_name_to_tf1(name) for name in hf_names}
    assert sorted(tf1 for tf1, _ in mapped.values()) == sorted(variables)
    # PyTorch stores a dense weight as [out, in], TF1 a kernel as [in, out]; the NSP [2, H] matrix is the same in both.
    assert {name for name, (tf1, transposed) in mapped.items() if transposed} == {
        name for name, (tf1, _) in mapped.items() if tf1.endswith("/kernel")
    }
    for name in hf_names:
        prefixed = name if name.startswith("cls.") else "bert." + name
        assert hf_weights.hf_name_to_tf1(prefixed) == mapped[name]
    layer_norm = ("bert/encoder/layer_1/attention/output/LayerNorm/gamma", False)
    assert hf_weights.hf_name_to_tf1("encoder.layer.1.attention.output.LayerNorm.weight") == layer_norm
    assert hf_weights.hf_name_to_tf1("bert.encoder.layer.1.attention.output.LayerNorm.gamma") == layer_norm  # older
    assert hf_weights.hf_name_to_tf1("bert.encoder.layer.0.attention.self.query.weight") == (
        "bert/encoder/layer_0/attention/self/query/kernel",
        True,
    )
    assert hf_weights.hf_name_to_tf1("cls.seq_relationship.weight") == ("cls/seq_relationship/output_weights", False)
    assert hf_weights.hf_name_to_tf1("classifier.weight") == (None, False)


@pytest.mark.slow
@pytest.mark.parametrize("hf_act, nsp", [("gelu", True), ("gelu_new", False)])
def test_hugging_face_pretraining_heads_match_transformers(hf_act, nsp, tmp_path):
    """transformers' BertForPreTraining (random weights, `bert.` prefix, tied decoder) vs our converted model."""
    import torch
    import transformers

    from official.nlp.checkpoints import model_loading

    hf_config = transformers.BertConfig(
        vocab_size=40,
        hidden_size=16,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=32,
        max_position_embeddings=16,
        hidden_act=hf_act,
    )
    torch.manual_seed(0)
    hf_class = transformers.BertForPreTraining if nsp else transformers.BertForMaskedLM
    hf = hf_class(hf_config).eval()
    with torch.no_grad():  # non-trivial biases and norms, so that every weight matters
        for p in hf.parameters():
            p.add_(torch.randn_like(p) * 0.1)
    hf.save_pretrained(tmp_path, safe_serialization=True)
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"w{i}" for i in range(35)]
    (tmp_path / "vocab.txt").write_text("\n".join(vocab) + "\n")

    model, files = model_loading.load_model(str(tmp_path), do_lower_case=True)
    assert isinstance(model, BertPretrainer) and model.use_next_sentence_label == nsp
    # BertForMaskedLM has no pooler; it is left fresh with a warning rather than refused.
    assert files.config.hidden_act == {"gelu": "gelu_exact", "gelu_new": "gelu"}[hf_act]

    x = _pretraining_inputs()
    ours = model(x)
    with torch.no_grad():
        out = hf(
            input_ids=torch.tensor(x["input_word_ids"], dtype=torch.long),
            attention_mask=torch.tensor(x["input_mask"], dtype=torch.long),
            token_type_ids=torch.tensor(x["input_type_ids"], dtype=torch.long),
        )
    mlm = out.prediction_logits if nsp else out.logits
    expected = np.take_along_axis(mlm.numpy(), x["masked_lm_positions"][..., None], axis=1)
    np.testing.assert_allclose(np.asarray(ours["mlm_logits"]), expected, atol=1e-4)
    if nsp:
        np.testing.assert_allclose(np.asarray(ours["nsp_logits"]), out.seq_relationship_logits.numpy(), atol=1e-5)


@pytest.mark.slow
def test_a_hugging_face_decoder_is_our_left_to_right_lm(tmp_path):
    """transformers' BertLMHeadModel (`is_decoder=True`: causal attention, next-token loss) converts into our
    left-to-right pretrainer: the same logits at every real position, the same LM loss."""
    import torch
    import transformers

    from official.nlp.checkpoints import model_loading
    from official.nlp.modeling import losses

    hf_config = transformers.BertConfig(
        vocab_size=40,
        hidden_size=16,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=32,
        max_position_embeddings=16,
        is_decoder=True,
    )
    torch.manual_seed(0)
    hf = transformers.BertLMHeadModel(hf_config).eval()
    with torch.no_grad():
        for p in hf.parameters():
            p.add_(torch.randn_like(p) * 0.1)
    hf.save_pretrained(tmp_path, safe_serialization=True)
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"w{i}" for i in range(35)]
    (tmp_path / "vocab.txt").write_text("\n".join(vocab) + "\n")

    model, files = model_loading.load_model(str(tmp_path), do_lower_case=True)
    assert files.config.attention == "left_to_right"
    assert isinstance(model, BertPretrainer) and model.objective == "ltr" and not model.use_next_sentence_label
    x = {k: v for k, v in _pretraining_inputs().items() if k != "masked_lm_positions"}
    ours = np.asarray(model(x)["ltr_logits"])
    ids = torch.tensor(x["input_word_ids"], dtype=torch.long)
    with torch.no_grad():
        out = hf(
            input_ids=ids,
            attention_mask=torch.tensor(x["input_mask"], dtype=torch.long),
            token_type_ids=torch.tensor(x["input_type_ids"], dtype=torch.long),
            labels=torch.where(torch.tensor(x["input_mask"]) > 0, ids, -100),  # shifted inside: predicts i + 1
        )
    real = x["input_mask"].astype(bool)
    np.testing.assert_allclose(ours[real], out.logits.numpy()[real], atol=1e-4)
    labels = losses.next_token_labels(x["input_word_ids"], x["input_mask"])
    assert float(losses.ltr_losses(labels, {"ltr_logits": ours})["ltr_loss"]) == pytest.approx(
        float(out.loss), rel=1e-5
    )


def test_a_truncated_or_damaged_safetensors_file_names_the_file_and_the_tensor(tmp_path):
    """Issue 40: a `model.safetensors` cut short gave `ValueError: cannot reshape array of size ...`."""
    import json
    import struct

    import safetensors.numpy

    from official.nlp.common.errors import InputError

    tensors = {"a.weight": np.ones((4, 8), np.float32), "b.weight": np.zeros((16, 8), np.float32)}
    whole = tmp_path / "model.safetensors"
    safetensors.numpy.save_file(tensors, str(whole))
    data = whole.read_bytes()
    (header_size,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + header_size])
    last = max((k for k in header if k != "__metadata__"), key=lambda k: header[k]["data_offsets"][1])
    cut = tmp_path / "cut.safetensors"
    cut.write_bytes(data[:-100])
    with pytest.raises(InputError, match=rf"cut.safetensors is truncated: tensor {last} ends at byte .*download it"):
        hf_weights.load_safetensors(str(cut))
    cut.write_bytes(data[: 8 + header_size // 2])  # cut inside the header
    with pytest.raises(InputError, match=r"cut.safetensors is not a safetensors file, or is truncated \(its header"):
        hf_weights.load_safetensors(str(cut))

    def rewritten(name, **changes):
        changed = dict(header, **{name: dict(header[name], **changes)})
        raw = json.dumps(changed).encode()
        path = tmp_path / "changed.safetensors"
        path.write_bytes(struct.pack("<Q", len(raw)) + raw + data[8 + header_size :])
        return str(path)

    with pytest.raises(InputError, match=r"tensor a.weight has 128 bytes for the shape \[4, 9\] of F32 \(144 exp"):
        hf_weights.load_safetensors(rewritten("a.weight", shape=[4, 9]))
    with pytest.raises(InputError, match=r"tensor a.weight has no valid dtype, shape and data_offsets"):
        hf_weights.load_safetensors(rewritten("a.weight", data_offsets=[64, 0]))
