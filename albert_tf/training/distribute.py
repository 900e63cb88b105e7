"""Strategies, precision and the slicing of global batches over replicas."""

from typing import Dict, Optional

import tensorflow as tf
import tf_keras as keras

_POLICIES = {"float32": "float32", "bfloat16": "mixed_bfloat16", "float16": "mixed_float16"}

_MIRRORED = {}


def get_strategy(name: str, tpu: Optional[str] = None, zone: Optional[str] = None,
                 project: Optional[str] = None) -> tf.distribute.Strategy:
  """one_device, mirrored (all GPUs, else all logical CPUs), multi_worker_mirrored (TF_CONFIG), tpu.

  A process reuses one MirroredStrategy per device set: separate instances
  would reuse the same collective-op keys, which the runtime rejects.
  """
  if name == "one_device":
    gpus = tf.config.list_logical_devices("GPU")
    return tf.distribute.OneDeviceStrategy(gpus[0].name if gpus else "/cpu:0")
  if name == "mirrored":
    devices = tuple(d.name for d in (tf.config.list_logical_devices("GPU")
                                     or tf.config.list_logical_devices("CPU")))
    if devices not in _MIRRORED:
      _MIRRORED[devices] = tf.distribute.MirroredStrategy(list(devices))
    return _MIRRORED[devices]
  if name == "multi_worker_mirrored":
    return tf.distribute.MultiWorkerMirroredStrategy()
  if name == "tpu":
    resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu=tpu or "", zone=zone,
                                                                 project=project)
    tf.config.experimental_connect_to_cluster(resolver)
    tf.tpu.experimental.initialize_tpu_system(resolver)
    return tf.distribute.TPUStrategy(resolver)
  raise ValueError(f"--distribution_strategy must be one of one_device, mirrored, "
                   f"multi_worker_mirrored, tpu; got {name!r}")


def is_chief(strategy) -> bool:
  """True unless this process is a non-chief worker of a multi-worker cluster."""
  resolver = getattr(strategy, "cluster_resolver", None)
  if resolver is None or not resolver.cluster_spec().as_dict():
    return True
  return resolver.task_type in ("chief", None) or (
      resolver.task_type == "worker" and resolver.task_id == 0
      and "chief" not in resolver.cluster_spec().as_dict())


def set_precision(dtype: str) -> None:
  """Sets the global Keras policy for --dtype (variables always stay float32). `auto` is
  resolved before this (`precision.resolve`)."""
  if dtype not in _POLICIES:
    raise ValueError(f"--dtype must be float32, bfloat16 or float16, got {dtype!r}")
  keras.mixed_precision.set_global_policy(_POLICIES[dtype])


def distribute_global_batch(strategy, batch: Dict[str, tf.Tensor], global_batch: int):
  """Each replica takes its contiguous slice of a global batch (same data on every worker)."""
  per_replica = global_batch // strategy.num_replicas_in_sync

  def slice_for(ctx):
    i = ctx.replica_id_in_sync_group
    return {k: v[i * per_replica:(i + 1) * per_replica] for k, v in batch.items()}

  return strategy.experimental_distribute_values_from_function(slice_for)


def check_batch_sizes(strategy, **batch_sizes: int) -> None:
  """Global batch sizes must be positive and split evenly over the replicas."""
  replicas = strategy.num_replicas_in_sync
  for flag, size in batch_sizes.items():
    if size <= 0:
      raise ValueError(f"--{flag}={size} must be positive")
    if size % replicas:
      raise ValueError(f"--{flag}={size} is not divisible by the {replicas} replicas")
