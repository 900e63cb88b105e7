"""albert_tf: ALBERT for TensorFlow 2 and tf_keras, faithful to the released checkpoints.

The folders say what a module may import: `modeling/`, `text/` and `training/`
stand alone (but for the `files` and `cli` helpers), `data/` builds on `text/`,
`formats/` (every model layout, one module each) on `modeling/` and `text/`, `export/`
(every export target, one module each) on `formats/`, `runs.py` (the one owner of a
trained run's directory) on those, `predictor.py` (a run's answers for new text) on
`runs.py`, `tasks/` (the training tasks) on `runs.py`, and `commands/` (convert, the
exporters and predict) beside the tasks.
"""

from albert_tf.modeling.config import AlbertConfig, PRESETS
from albert_tf.modeling.encoder import AlbertEncoder
from albert_tf.modeling.heads import (AlbertClassificationHead, AlbertMaskedLMHead,
                                      AlbertSentenceOrderHead, AlbertSpanHead, AlbertSpanV2Head)
from albert_tf.modeling.models import (AlbertClassifier, AlbertMultipleChoice, AlbertPretrainer,
                                       AlbertQuestionAnswerer, AlbertTokenClassifier,
                                       AlbertWindowsClassifier)
from albert_tf.modeling.checkpoints import LoadReport
from albert_tf.formats import load_checkpoint, load_original_checkpoint, save_original_checkpoint
from albert_tf.formats.huggingface import build_hf_model, load_hf_weights, save_hf_model
from albert_tf import packing

__version__ = "0.1.0"


def __getattr__(name):
  """`albert_tf.Predictor`, imported on first use (it reads runs: TensorFlow Hub, exports)."""
  if name == "Predictor":
    from albert_tf.predictor import Predictor  # pylint: disable=g-import-not-at-top
    return Predictor
  raise AttributeError(f"module 'albert_tf' has no attribute {name!r}")
