"""Keras models that take raw text: the tokenizer inside `fit`, `evaluate` and `predict`, saved whole as `.keras`,
exported in one call as the SavedModel of `export_model.py` (`base.TextTask`)."""
