"""Benchmarks: this library against its peers (keras-hub, transformers, the original google-research/bert scripts).

Not part of the installed package (setup.cfg packages `official` only), and nothing in `official/` exists for it:
a benchmark imports the library as a user does. Run the entry points from the checkout's root as modules, e.g.
`python -m benchmarks.compare --what=step` (the commands and the figures are in docs/benchmarks.md):

    compare.py            against the peers, every figure a ratio to a peer run in the same process
                          (step.py, finetune.py, serve.py, input.py hold the comparisons, timing.py the clock)
    pretraining_loop.py   our training loop against Keras `fit` on the same pretraining model and data
    pretraining_data.py   the pretraining-data generator against the original script (generator_vs_original.py,
                          original_tf1.py), or one worker's stages (pretraining_stages.py)
    tokenizer.py          the in-graph tokenizers against stock tensorflow-text and Hugging Face `tokenizers`
    serving_rate.py       raw-text requests/s of an export, in a process that imports only TensorFlow

The peers come from the `bench` extra (`pip install -e '.[bench]'`); only the comparisons import them.
"""
