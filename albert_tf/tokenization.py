"""`albert_tf.tokenization`, kept at the path of the original repo's module: it is
`albert_tf.text.tokenization` itself (the same module object)."""

import sys

from albert_tf.text import tokenization as _module

sys.modules[__name__] = _module
