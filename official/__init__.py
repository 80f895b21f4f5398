"""BERT for TensorFlow 2 and Keras 3.

The import name `official` follows the TensorFlow Model Garden layout that BERT users know; it is the same
top-level name that `tf-models-official` installs, so the two packages cannot be installed side by side.
"""
