"""run_pretraining.py, sent a real SIGINT (a Ctrl-C) right after it commits the checkpoint of $INTERRUPT_AT_STEP.

Sent from inside so that it lands at a known step however fast the machine trains. Test-only wrapper; it runs the
real script's main with the same flags.
"""

import os
import runpy
import signal
import sys

import tensorflow as tf

INTERRUPT_AT_STEP = int(os.environ["INTERRUPT_AT_STEP"])
_save = tf.train.CheckpointManager.save


def save_then_interrupt(self, checkpoint_number=None, check_interval=True, options=None):
    path = _save(self, checkpoint_number=checkpoint_number, check_interval=check_interval, options=options)
    if checkpoint_number == INTERRUPT_AT_STEP and os.path.basename(self.directory.rstrip("/")) != "worker-0":
        os.kill(os.getpid(), signal.SIGINT)
    return path


if __name__ == "__main__":
    tf.train.CheckpointManager.save = save_then_interrupt
    script = os.path.join(os.path.dirname(__file__), "..", "..", "run_scripts", "run_pretraining.py")
    sys.argv[0] = script
    runpy.run_path(script, run_name="__main__")
