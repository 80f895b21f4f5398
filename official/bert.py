"""The public API: every name the README and docs use, in one namespace (`from official import bert`).

    from official import bert

    classifier = bert.TextClassifier.from_model_dir("output/minilm", label_names=["negative", "positive"])
    classifier.fit(texts, labels, epochs=2)
    classifier.predict(["I loved it"])["label_name"]
    classifier.save("output/classifier.keras")      # keras.saving.load_model after `from official import bert`
    classifier.export("output/classifier_export")   # the SavedModel export_model.py writes

Importing this module imports TensorFlow and registers the library's Keras classes (so `.keras` files load). The
packages below `official.nlp` stay importable one by one; the scripts import only what they use.
"""

from official.nlp.checkpoints.model_dir import convert_checkpoint, save_model_dir
from official.nlp.modeling.configs import BertConfig
from official.nlp.modeling.encoder import BertEncoder
from official.nlp.modeling.models import (
    BertClassifier,
    BertMultipleChoice,
    BertPretrainer,
    BertSpanLabeler,
    BertTokenClassifier,
)
from official.nlp.serving.exporter import export_model
from official.nlp.text_tasks.classifier import TextClassifier
from official.nlp.text_tasks.question_answerer import QuestionAnswerer
from official.nlp.text_tasks.token_classifier import TokenClassifier
from official.nlp.tokenizers.text_layers import BertPackInputs, BertTokenizer
from official.nlp.tokenizers.tokenization import FullTokenizer
from official.nlp.training.optimization import create_optimizer

__all__ = [
    "BertClassifier",
    "BertConfig",
    "BertEncoder",
    "BertMultipleChoice",
    "BertPackInputs",
    "BertPretrainer",
    "BertSpanLabeler",
    "BertTokenClassifier",
    "BertTokenizer",
    "FullTokenizer",
    "QuestionAnswerer",
    "TextClassifier",
    "TokenClassifier",
    "convert_checkpoint",
    "create_optimizer",
    "export_model",
    "save_model_dir",
]
