"""Where the rerun's own pretraining pays off: the pilot that picks the pretraining recipe on held-out loss, and the
transfer curve (one long run, its checkpoints at doubling steps fine-tuned beside random init)."""
