"""albert_tf: ALBERT for TensorFlow 2 and tf_keras, faithful to the released checkpoints.

The folders say what a module may import: `modeling/`, `text/` and `training/`
stand alone (but for the `files` and `cli` helpers), `data/` builds on `text/`,
`formats/` (every model layout, one module each) on `modeling/` and `text/`, `export/`
(every export target, one module each) on `formats/`, `runs.py` (the one owner of a
trained run's directory) on those, `predictor.py` (a run's answers for new text) on
`runs.py`, `tasks/` (the training tasks) on `runs.py`, and `commands/` (convert, the
exporters and predict) beside the tasks.
"""

import importlib

# Each public name and the module that defines it, imported on first use: `import albert_tf`
# itself imports no TensorFlow, so that a command can quiet TensorFlow's start-up before it
# is imported (albert_tf.console).
_EXPORTS = {
    "AlbertConfig": "albert_tf.modeling.config", "PRESETS": "albert_tf.modeling.config",
    "AlbertEncoder": "albert_tf.modeling.encoder",
    **{name: "albert_tf.modeling.heads" for name in (
        "AlbertClassificationHead", "AlbertMaskedLMHead", "AlbertSentenceOrderHead",
        "AlbertSpanHead", "AlbertSpanV2Head")},
    **{name: "albert_tf.modeling.models" for name in (
        "AlbertClassifier", "AlbertMultipleChoice", "AlbertPretrainer",
        "AlbertQuestionAnswerer", "AlbertTokenClassifier", "AlbertWindowsClassifier")},
    "LoadReport": "albert_tf.modeling.checkpoints",
    **{name: "albert_tf.formats" for name in (
        "load_checkpoint", "load_original_checkpoint", "save_original_checkpoint")},
    **{name: "albert_tf.formats.huggingface" for name in (
        "build_hf_model", "load_hf_weights", "save_hf_model")},
    "Predictor": "albert_tf.predictor",
}
__all__ = sorted(_EXPORTS)

__version__ = "0.1.0"


def __getattr__(name):
  """`albert_tf.AlbertEncoder`, `albert_tf.Predictor`, ...: imported on first use."""
  if name in _EXPORTS:
    value = getattr(importlib.import_module(_EXPORTS[name]), name)
    globals()[name] = value
    return value
  if name == "packing":   # (the original repo's module path, kept)
    return importlib.import_module("albert_tf.packing")
  raise AttributeError(f"module 'albert_tf' has no attribute {name!r}")
