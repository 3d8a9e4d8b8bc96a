"""Text helpers shared by the hello-pack tools and its guardrail.

The tools and the check import this module with relative imports
(``from ..lib import text``): the pack service loads the pack as a package,
so the pack's own modules import each other the way any package's do.
"""

import re

_WORD = re.compile(r"\w+", re.UNICODE)


def words(text):
    """Return the words of *text*, in order."""
    return _WORD.findall(text)


def shouted_words(text):
    """Return the words of *text* written in capitals (two letters or more)."""
    return [w for w in words(text) if len(w) > 1 and w.isupper()]
