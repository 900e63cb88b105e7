"""Data: files as downloaded -> examples -> features -> TFRecords -> tf.data, one module per task."""
