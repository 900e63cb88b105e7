"""TF-Hub SavedModels: writing the encoder, preprocessor and serving classifier, TFLite, and Keras 3
layers over the exports (reading a SavedModel back is `albert_tf.formats.tf_hub`'s)."""
