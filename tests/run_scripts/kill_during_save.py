"""run_pretraining.py, killed with SIGKILL while it writes the checkpoint of step $KILL_AT_STEP.

The worst moment for a preemption: the checkpoint's files are on disk but not yet committed. Test-only wrapper;
it runs the real script's main with the same flags.
"""

import os
import runpy
import signal
import sys

import tensorflow as tf

KILL_AT_STEP = int(os.environ["KILL_AT_STEP"])
_save = tf.train.CheckpointManager.save


def save_then_die(self, checkpoint_number=None, check_interval=True, options=None):
    if checkpoint_number == KILL_AT_STEP and os.path.basename(self.directory.rstrip("/")) != "worker-0":
        self._checkpoint.write(os.path.join(self.directory, f"ckpt-{checkpoint_number}"))
        os.kill(os.getpid(), signal.SIGKILL)
    return _save(self, checkpoint_number=checkpoint_number, check_interval=check_interval, options=options)


if __name__ == "__main__":
    tf.train.CheckpointManager.save = save_then_die
    script = os.path.join(os.path.dirname(__file__), "..", "..", "run_scripts", "run_pretraining.py")
    sys.argv[0] = script
    runpy.run_path(script, run_name="__main__")
