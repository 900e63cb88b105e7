"""Data pipelines: example -> features -> tf.data, one module per task."""
