"""albert_tf: ALBERT for TensorFlow 2 and tf_keras, faithful to the released checkpoints."""

from albert_tf.config import AlbertConfig, PRESETS
from albert_tf.encoder import AlbertEncoder
from albert_tf.heads import (AlbertClassificationHead, AlbertMaskedLMHead,
                             AlbertSentenceOrderHead, AlbertSpanHead, AlbertSpanV2Head)
from albert_tf.models import (AlbertClassifier, AlbertMultipleChoice, AlbertPretrainer,
                              AlbertQuestionAnswerer)
from albert_tf import packing
from albert_tf.checkpoints import (LoadReport, load_checkpoint, load_original_checkpoint,
                                   save_original_checkpoint)

__version__ = "0.1.0"
