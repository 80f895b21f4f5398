"""Other projects' checkpoint formats, read and written: original TF1 checkpoints (google-research/bert), Hugging Face
folders (transformers), keras-hub preset folders, and hub names (hf://, kaggle://)."""
