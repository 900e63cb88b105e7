"""`albert_tf.preprocessing`, kept at its earlier path: it is `albert_tf.text.preprocessing` itself
(the same module object)."""

import sys

from albert_tf.text import preprocessing as _module

sys.modules[__name__] = _module
