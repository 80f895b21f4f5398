"""The public API: every name the README and docs use, in one namespace (`from official import bert`).

    from official import bert

    classifier = bert.TextClassifier.from_model_dir("output/minilm", label_names=["negative", "positive"])
    classifier.fit(texts, labels, epochs=2)
    classifier.predict(["I loved it"])["label_name"]
    classifier.save("output/classifier.keras")      # keras.saving.load_model after `from official import bert`
    classifier.export("output/classifier_export")   # the SavedModel export_model.py writes

Importing this module imports TensorFlow and registers the library's Keras classes (so `.keras` files load). The
packages of `official.nlp` below it stay importable one by one (the scripts import only what they use, after
`official.nlp.common.cli`), and each name here is defined once there.
"""

from official.nlp.checkpoints.conversion import convert_checkpoint
from official.nlp.checkpoints.model_dir import save_model_dir
from official.nlp.checkpoints.model_loading import load_model, read_model_files
from official.nlp.checkpoints.peers.hf_export import export_to_hugging_face
from official.nlp.data.corpus.preparation import prepare_corpus
from official.nlp.data.corpus.settings import CorpusConfig
from official.nlp.data.pretraining.dataloader import PretrainDataConfig, PretrainDataLoader
from official.nlp.modeling.configs import BertConfig
from official.nlp.modeling.encoder import BertEncoder
from official.nlp.modeling.models import (
    BertClassifier,
    BertMultipleChoice,
    BertPretrainer,
    BertSpanLabeler,
    BertTokenClassifier,
)
from official.nlp.paper.config import PaperConfig
from official.nlp.paper.reproduce import reproduce_paper
from official.nlp.serving.exporter import export_model
from official.nlp.tasks.classification import ClassifierConfig, run_classifier
from official.nlp.tasks.pretraining import run_pretraining
from official.nlp.tasks.pretraining_config import PretrainingConfig
from official.nlp.tasks.question_answering import SquadConfig, run_squad
from official.nlp.tasks.tagging import TaggingConfig, run_ner
from official.nlp.text_tasks.classifier import TextClassifier
from official.nlp.text_tasks.question_answerer import QuestionAnswerer
from official.nlp.text_tasks.token_classifier import TokenClassifier
from official.nlp.tokenizers.text_layers import BertPackInputs, BertTokenizer
from official.nlp.tokenizers.tokenization import FullTokenizer
from official.nlp.training.optimization import create_optimizer

__all__ = [
    # Text tasks: raw strings in fit, evaluate and predict (docs/python.md).
    "QuestionAnswerer",
    "TextClassifier",
    "TokenClassifier",
    # Tokenizers (docs/tokenizers.md).
    "BertPackInputs",
    "BertTokenizer",
    "FullTokenizer",
    # Models (docs/checkpoints.md).
    "BertClassifier",
    "BertConfig",
    "BertEncoder",
    "BertMultipleChoice",
    "BertPretrainer",
    "BertSpanLabeler",
    "BertTokenClassifier",
    # Model directories and checkpoints (docs/checkpoints.md).
    "convert_checkpoint",
    "export_to_hugging_face",
    "load_model",
    "read_model_files",
    "save_model_dir",
    # The scripts' jobs, from Python: each takes its script's flags as a dataclass.
    "ClassifierConfig",
    "CorpusConfig",
    "PaperConfig",
    "PretrainingConfig",
    "SquadConfig",
    "TaggingConfig",
    "prepare_corpus",
    "reproduce_paper",
    "run_classifier",
    "run_ner",
    "run_pretraining",
    "run_squad",
    # Training and serving.
    "PretrainDataConfig",
    "PretrainDataLoader",
    "create_optimizer",
    "export_model",
]
