"""The original ALBERT optimization: tf-models-official's AdamW or LAMB (weight
decay 0.01, not on LayerNorm or bias; epsilon 1e-6) under polynomial decay to
0 with linear warmup. Shared by pretraining and every fine-tuning task.
"""

import tensorflow as tf
import tf_keras as keras


@keras.utils.register_keras_serializable(package="albert_tf")
class AlbertLearningRate(keras.optimizers.schedules.LearningRateSchedule):
  """The original schedule: polynomial decay to 0 over `num_train_steps`, with linear
  warmup over `num_warmup_steps` counted from `start_warmup_step`."""

  def __init__(self, learning_rate: float, num_train_steps: int, num_warmup_steps: int = 0,
               start_warmup_step: int = 0, poly_power: float = 1.0):
    super().__init__()
    self.learning_rate = learning_rate
    self.num_train_steps = num_train_steps
    self.num_warmup_steps = num_warmup_steps
    self.start_warmup_step = start_warmup_step
    self.poly_power = poly_power
    self._decay = keras.optimizers.schedules.PolynomialDecay(
        learning_rate, num_train_steps, end_learning_rate=0.0, power=poly_power)

  def __call__(self, step):
    decayed = self._decay(step)
    if not self.num_warmup_steps:
      return decayed
    warm_step = tf.maximum(tf.cast(step, tf.float32) - self.start_warmup_step, 0.0)
    warm = self.learning_rate * warm_step / float(self.num_warmup_steps)
    return tf.where(warm_step < self.num_warmup_steps, warm, decayed)

  def get_config(self):
    return dict(learning_rate=self.learning_rate, num_train_steps=self.num_train_steps,
                num_warmup_steps=self.num_warmup_steps, start_warmup_step=self.start_warmup_step,
                poly_power=self.poly_power)


def create_optimizer(name: str, schedule, dtype: str = "float32"):
  """tf-models-official's LAMB or AdamW with the original settings (loss scaling for float16)."""
  from official.nlp import optimization  # pylint: disable=g-import-not-at-top
  kwargs = dict(learning_rate=schedule, weight_decay_rate=0.01, beta_1=0.9, beta_2=0.999,
                epsilon=1e-6, exclude_from_weight_decay=["LayerNorm", "layer_norm", "bias"])
  if name == "lamb":
    optimizer = optimization.LAMB(**kwargs)
  elif name == "adamw":
    optimizer = optimization.AdamWeightDecay(gradient_clip_norm=0.0, **kwargs)
  else:
    raise ValueError(f"--optimizer must be lamb or adamw, got {name!r}")
  if dtype == "float16":
    optimizer = keras.mixed_precision.LossScaleOptimizer(optimizer)
  return optimizer


