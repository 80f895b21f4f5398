"""The public API: every name the README and docs use, in one namespace (`from official import bert`).

    from official import bert

    classifier = bert.TextClassifier.from_model_dir("output/minilm", label_names=["negative", "positive"])
    classifier.fit(texts, labels, epochs=2)
    classifier.predict(["I loved it"])["label_name"]
    classifier.save("output/classifier.keras")      # keras.saving.load_model after `from official import bert`
    classifier.export("output/classifier_export")   # the SavedModel export_model.py writes

One shape per kind of thing:

- a model, by what it is: a text task on raw strings, `<Task>.from_model_dir(path)` (a new head with `label_names`,
  else the fine-tuned one `path` holds); a pretrained model's files, `read_model_files(path)` (config, vocabulary,
  case and checkpoint of a model directory, a TF1, Hugging Face or keras-hub checkpoint; `.build_encoder()`
  restores the encoder, `.tokenizer()`); a fine-tuned model, with its head, `load_fine_tuned(path)` ->
  `(description, keras_model)`, which like `from_model_dir` also takes a fine-tuning run's `--output_dir`.
- a job, as its script runs it: its config dataclass (the script's flags are its fields) and one function that
  takes it and returns a result dataclass, `run_classifier(ClassifierConfig(...))`; one for each script in
  `run_scripts/` (`tests/test_public_api.py` keeps it so).

Importing this module imports TensorFlow and registers the library's Keras classes (so `.keras` files load). The
packages of `official.nlp` below it stay importable one by one (the scripts import only what they use, after
`official.nlp.common.cli`), and each name here is defined once there.
"""

from official.nlp.checkpoints.conversion import ConversionConfig, convert
from official.nlp.checkpoints.fine_tuned import load_fine_tuned
from official.nlp.checkpoints.model_dir import save_model_dir
from official.nlp.checkpoints.model_loading import read_model_files
from official.nlp.data.corpus.preparation import prepare_corpus
from official.nlp.data.corpus.settings import CorpusConfig
from official.nlp.data.pretraining.dataloader import PretrainDataConfig, PretrainDataLoader
from official.nlp.data.pretraining.generator import create_pretraining_data
from official.nlp.data.pretraining.settings import PretrainingDataConfig
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
from official.nlp.serving.export_config import ExportConfig, export
from official.nlp.tasks.classification import ClassifierConfig, run_classifier
from official.nlp.tasks.feature_extraction import FeatureExtractionConfig, run_feature_extraction
from official.nlp.tasks.multiple_choice import MultipleChoiceConfig, run_swag
from official.nlp.tasks.pretraining import run_pretraining
from official.nlp.tasks.pretraining_config import PretrainingConfig
from official.nlp.tasks.question_answering import SquadConfig, run_squad
from official.nlp.tasks.tagging import TaggingConfig, run_ner
from official.nlp.text_tasks.classifier import TextClassifier
from official.nlp.text_tasks.question_answerer import QuestionAnswerer
from official.nlp.text_tasks.token_classifier import TokenClassifier
from official.nlp.tokenizers.text_layers import BertPackInputs, BertTokenizer
from official.nlp.tokenizers.tokenization import FullTokenizer
from official.nlp.tokenizers.wordpiece_vocab import VocabConfig, build_vocab_file
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
    # Reading and writing models (docs/checkpoints.md): a pretrained model's files, a fine-tuned model, a Keras
    # model written as a model directory.
    "load_fine_tuned",
    "read_model_files",
    "save_model_dir",
    # The scripts' jobs, from Python: each takes its script's flags as a dataclass and returns a dataclass.
    "build_vocab_file",  # build_vocab.py
    "VocabConfig",
    "convert",  # convert_checkpoint.py
    "ConversionConfig",
    "create_pretraining_data",  # create_pretraining_data.py
    "PretrainingDataConfig",
    "export",  # export_model.py
    "ExportConfig",
    "run_feature_extraction",  # extract_features.py
    "FeatureExtractionConfig",
    "prepare_corpus",  # prepare_corpus.py
    "CorpusConfig",
    "reproduce_paper",  # reproduce_paper.py
    "PaperConfig",
    "run_classifier",  # run_classifier.py
    "ClassifierConfig",
    "run_ner",  # run_ner.py
    "TaggingConfig",
    "run_pretraining",  # run_pretraining.py
    "PretrainingConfig",
    "run_squad",  # run_squad.py
    "SquadConfig",
    "run_swag",  # run_swag.py
    "MultipleChoiceConfig",
    # Training.
    "PretrainDataConfig",
    "PretrainDataLoader",
    "create_optimizer",
]
