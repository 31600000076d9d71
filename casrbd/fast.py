"""``casrbd.fast`` is ``casrbd.codegen.fast``: this module puts that one in its place when first imported."""

import sys

from .codegen import fast

sys.modules[__name__] = fast
