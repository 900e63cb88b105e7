"""`albert_tf.packing`, kept at the path of the original repo's module: it is
`albert_tf.text.packing` itself (the same module object)."""

import sys

from albert_tf.text import packing as _module

sys.modules[__name__] = _module
