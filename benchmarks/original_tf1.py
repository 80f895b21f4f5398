"""Starts the original google-research/bert `create_pretraining_data.py` (TensorFlow 1 code) under TensorFlow 2.

The benchmark's own launcher, not part of the library: ``tensorflow`` is aliased to ``tensorflow.compat.v1``
before the script (and its ``tokenization`` module, found next to it) import it, so ``tf.flags``, ``tf.gfile``,
``tf.python_io`` and ``tf.app.run`` resolve as in TF 1. The script runs unchanged, as ``__main__``.

  python -m benchmarks.original_tf1 /path/to/bert/create_pretraining_data.py --input_file=... ...
"""

import os
import runpy
import sys


def main() -> None:
    if len(sys.argv) < 2:
        sys.exit("usage: python -m benchmarks.original_tf1 <create_pretraining_data.py> [flags]")
    script = os.path.abspath(sys.argv[1])
    import tensorflow.compat.v1 as tf_v1

    sys.modules["tensorflow"] = tf_v1
    sys.path.insert(0, os.path.dirname(script))
    sys.argv = [script, *sys.argv[2:]]
    runpy.run_path(script, run_name="__main__")


if __name__ == "__main__":
    main()
