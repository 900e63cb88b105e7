"""Test setup: two logical CPUs (for MirroredStrategy) and a clean Keras state per test."""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import pytest
import tensorflow as tf
import tf_keras as keras

_cpus = tf.config.list_physical_devices("CPU")
tf.config.set_logical_device_configuration(
    _cpus[0], [tf.config.LogicalDeviceConfiguration()] * 2)


@pytest.fixture(autouse=True)
def _reset_keras():
  keras.mixed_precision.set_global_policy("float32")
  keras.backend.clear_session()
  tf.random.set_seed(0)
  yield
  keras.mixed_precision.set_global_policy("float32")


@pytest.fixture(scope="session")
def spm_model(tmp_path_factory):
  """A small ALBERT vocabulary trained on the pydoc topics that ship with Python."""
  from albert_tf.text import vocab
  from albert_tf.data import sample_corpus
  root = tmp_path_factory.mktemp("vocab")
  corpus = sample_corpus.write_pydoc_corpus(str(root / "pydoc.txt"))
  return vocab.train_vocab(corpus, str(root / "pydoc"), vocab_size=1500)
