"""Distribution strategies from one flag: one_device | mirrored | multi_worker_mirrored | tpu.

Example:

>>> strategy = get_distribution_strategy("one_device")
>>> strategy.num_replicas_in_sync
1
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import tensorflow as tf
from absl import logging

from official.nlp.common.errors import InputError

STRATEGIES = ("one_device", "mirrored", "multi_worker_mirrored", "tpu")


def get_distribution_strategy(
    distribution_strategy: str = "one_device",
    *,
    num_gpus: int | None = None,
    tpu: str | None = None,
    all_reduce_alg: str | None = None,
) -> tf.distribute.Strategy:
    """Builds a `tf.distribute.Strategy`.

    Args:
      distribution_strategy: one of `STRATEGIES`.
      num_gpus: GPUs to use on this host. None uses every visible GPU; 0 forces the CPU. For "mirrored" with no
        GPU, every logical CPU device is a replica (useful for testing replica logic on a CPU).
      tpu: the TPU name or address for "tpu" ("local" on a TPU VM, a name or grpc:// address otherwise).
      all_reduce_alg: "nccl" or "ring" for multi_worker_mirrored; "nccl" or "hierarchical_copy" for mirrored.
    """
    name = distribution_strategy.lower()
    if name not in STRATEGIES:
        raise InputError(f"--distribution_strategy must be one of {STRATEGIES}, got {distribution_strategy!r}")
    # Physical devices: listing logical ones would start TensorFlow's context, after which
    # multi_worker_mirrored can no longer configure its collective ops.
    gpus = [f"/gpu:{i}" for i in range(len(tf.config.list_physical_devices("GPU")))]
    if num_gpus is not None and num_gpus > len(gpus):
        raise InputError(f"--num_gpus={num_gpus} but only {len(gpus)} GPU(s) are visible to TensorFlow")
    use_gpus = gpus if num_gpus is None else gpus[:num_gpus]

    if name == "one_device":
        return tf.distribute.OneDeviceStrategy("/gpu:0" if use_gpus else "/cpu:0")
    if name == "mirrored":
        devices = use_gpus or [d.name for d in tf.config.list_logical_devices("CPU")]
        cross_device_ops = None
        if all_reduce_alg == "nccl":
            cross_device_ops = tf.distribute.NcclAllReduce()
        elif all_reduce_alg == "hierarchical_copy":
            cross_device_ops = tf.distribute.HierarchicalCopyAllReduce()
        elif all_reduce_alg is not None:
            raise InputError(
                f"all_reduce_alg for mirrored must be 'nccl' or 'hierarchical_copy', got {all_reduce_alg!r}"
            )
        return tf.distribute.MirroredStrategy(devices=list(devices), cross_device_ops=cross_device_ops)
    if name == "multi_worker_mirrored":
        if "TF_CONFIG" not in os.environ:
            logging.warning("multi_worker_mirrored without TF_CONFIG: running as a single worker")
        implementation = {
            None: tf.distribute.experimental.CommunicationImplementation.AUTO,
            "ring": tf.distribute.experimental.CommunicationImplementation.RING,
            "nccl": tf.distribute.experimental.CommunicationImplementation.NCCL,
        }.get(all_reduce_alg)
        if implementation is None:
            raise InputError(
                f"all_reduce_alg for multi_worker_mirrored must be 'ring' or 'nccl', got {all_reduce_alg!r}"
            )
        return tf.distribute.MultiWorkerMirroredStrategy(
            communication_options=tf.distribute.experimental.CommunicationOptions(implementation=implementation)
        )
    # TPU.
    if not tpu:
        raise InputError("--distribution_strategy=tpu needs --tpu (use --tpu=local on a TPU VM)")
    resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu=tpu)
    if tpu != "local":  # a TPU VM runs on its TPU host; a remote TPU needs a connection
        tf.config.experimental_connect_to_cluster(resolver)
    tf.tpu.experimental.initialize_tpu_system(resolver)
    return tf.distribute.TPUStrategy(resolver)


@dataclass(frozen=True)
class WorkerInfo:
    """Where this process sits in the job: its index among the input workers and whether it is the chief."""

    index: int
    count: int
    is_chief: bool


def worker_info(strategy: tf.distribute.Strategy) -> WorkerInfo:
    """The worker index/count for input sharding and checkpoint writing.

    Only multi_worker_mirrored has several Python processes; every other strategy runs one process that feeds all
    replicas (a multi-host TPU pod also has one client process).
    """
    if isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy):
        resolver = strategy.cluster_resolver
        spec = resolver.cluster_spec().as_dict()
        task_type, task_id = resolver.task_type, resolver.task_id or 0
        workers = len(spec.get("worker", [])) + len(spec.get("chief", []))
        if not spec:
            return WorkerInfo(0, 1, True)
        # With an explicit "chief" task it is index 0; otherwise worker 0 is the chief.
        if "chief" in spec:
            index = 0 if task_type == "chief" else task_id + 1
        else:
            index = task_id
        return WorkerInfo(index=index, count=max(workers, 1), is_chief=index == 0)
    return WorkerInfo(0, 1, True)


def local_replica_count(strategy: tf.distribute.Strategy) -> int:
    """Replicas fed by this process."""
    return strategy.num_replicas_in_sync // worker_info(strategy).count


def replica_seed(seed: int, global_replica_id: int) -> int:
    """The seed of replica `global_replica_id`'s random stream: `seed` itself for replica 0 (so one replica draws
    what a single-device run draws), an independent 32-bit hash of (seed, replica id) for the others."""
    if global_replica_id == 0:
        return int(seed)
    return int(np.random.SeedSequence([int(seed), global_replica_id]).generate_state(1)[0])


def seed_generator_states(model) -> list:
    """The Keras seed-generator states of a model (dropout): Keras does not track them for `tf.train.Checkpoint`,
    but resuming needs them, and `seed_replica_streams` splits them per replica."""
    return [v for v in model.non_trainable_variables if v.name == "seed_generator_state"]


def primary_seeds(state_variables: Sequence) -> list[int]:
    """The seed half of each seed-generator state, as replica 0 (the primary copy) holds it."""
    return [int(tf.convert_to_tensor(getattr(v, "value", v)).numpy()[0]) for v in state_variables]


def seed_replica_streams(strategy: tf.distribute.Strategy, state_variables: Sequence, seeds: Sequence[int]) -> None:
    """Gives every replica its own stream in each Keras seed-generator state (dropout), from the global replica id.

    Keras creates each state (`[seed, counter]`) with `aggregation="none"`: every replica holds its own copy, but
    all copies start equal and advance alike, so every replica would draw the same dropout masks (and every worker,
    since all call `keras.utils.set_random_seed` with the same seed). This sets the copy of global replica r to
    `[replica_seed(seeds[i], r), counter]`, keeping the counter. Replica 0 keeps `seeds[i]`, which is therefore
    what a checkpoint saves; call this again after restoring one (with the restored seeds) to split the streams the
    same way.

    Example (before `model.fit` under a MirroredStrategy):

        states = seed_generator_states(model)
        seed_replica_streams(strategy, states, primary_seeds(states))
    """
    if len(seeds) != len(state_variables):
        raise ValueError(f"{len(seeds)} seeds for {len(state_variables)} seed-generator states")
    first_replica = worker_info(strategy).index * local_replica_count(strategy)
    for variable, seed in zip(state_variables, seeds):
        components = strategy.experimental_local_results(getattr(variable, "value", variable))
        for i, component in enumerate(components):
            counter = component.numpy()[1]
            component.assign(
                np.array([replica_seed(seed, first_replica + i), counter], dtype=component.dtype.as_numpy_dtype)
            )


def set_logical_cpu_devices(count: int) -> None:
    """Splits the host CPU into `count` logical devices, so "mirrored" has `count` replicas on a CPU-only machine.

    Must run before TensorFlow initializes its devices (before any op runs).
    """
    cpu = tf.config.list_physical_devices("CPU")[0]
    try:
        tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * count)
    except RuntimeError as e:
        current = len(tf.config.list_logical_devices("CPU"))
        if current != count:
            raise RuntimeError(
                f"cannot split the CPU into {count} logical devices: TensorFlow is already initialized with {current}"
            ) from e


def tf_config_for_local_workers(ports: Sequence[int], index: int) -> str:
    """TF_CONFIG JSON for `len(ports)` worker processes on this host (loopback), this one being `index`."""
    return json.dumps(
        {"cluster": {"worker": [f"localhost:{p}" for p in ports]}, "task": {"type": "worker", "index": index}}
    )
