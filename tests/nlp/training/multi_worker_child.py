"""One worker of a two-process multi_worker_mirrored pretraining run on loopback (driven by test_multi_worker.py).

Usage: python -m tests.nlp.training.multi_worker_child INDEX PORT0,PORT1 CONFIG_JSON
"""

import json
import os
import sys

if __name__ == "__main__":
    index, ports, config_json = int(sys.argv[1]), [int(p) for p in sys.argv[2].split(",")], sys.argv[3]
    from official.nlp.training import distribution

    os.environ["TF_CONFIG"] = distribution.tf_config_for_local_workers(ports, index)
    from official.nlp.tasks.pretraining import run_pretraining
    from official.nlp.tasks.pretraining_config import PretrainingConfig

    result = run_pretraining(PretrainingConfig(**json.loads(config_json)))
    print(
        "RESULTS "
        + json.dumps(
            {"losses": [h["loss"] for h in result.history], "step": result.step, "export_dir": result.export_dir}
        )
    )
