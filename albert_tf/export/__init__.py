"""Every export target, one module each: TF-Hub encoder and preprocessor SavedModels
(`tf_hub`), raw-text serving classifiers (`serving`) and taggers (`tagger`), TFLite
(`tflite`), ONNX (`onnx`) and Keras 3 layers over the SavedModels (`keras3`); what an
export was made from (`loading`). Reading a SavedModel back is `albert_tf.formats.tf_hub`'s.
"""
