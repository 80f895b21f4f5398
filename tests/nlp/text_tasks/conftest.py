"""A tiny BERT with the real uncased vocabulary, as a model directory and as parts, shared by the text task tests."""

import keras
import pytest

from official.nlp.checkpoints import model_dir
from official.nlp.modeling.configs import BertConfig
from official.nlp.modeling.encoder import BertEncoder
from official.nlp.tokenizers.text_layers import BertTokenizer

TINY = dict(hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64)


def tiny_encoder(seed: int = 0) -> BertEncoder:
    keras.utils.set_random_seed(seed)
    return BertEncoder.from_bert_config(BertConfig(vocab_size=30522, max_position_embeddings=64, **TINY))


@pytest.fixture(scope="session")
def uncased_tokenizer(uncased_vocab):
    return BertTokenizer(str(uncased_vocab), do_lower_case=True)


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory, uncased_vocab):
    """A pretrained-style model directory: the tiny encoder's checkpoint, config, vocabulary and case."""
    path = str(tmp_path_factory.mktemp("tiny_model_dir") / "model")
    model_dir.save_model_dir(path, tiny_encoder(), vocab_file=str(uncased_vocab), do_lower_case=True)
    return path
