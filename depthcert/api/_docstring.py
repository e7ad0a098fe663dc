"""The docstrings of the public functions whose numpydoc text (Parameters, Returns, Raises,
Examples) is longer than a function may be (STYLE: 50 lines, docstring included): the text sits
beside the function as a module constant and :func:`doc` makes it the function's ``__doc__``
(the API reference and the doctests read it there)."""
from __future__ import annotations

import inspect

__all__ = ["doc"]


def doc(text: str):
    """Decorator: the function's docstring is ``text`` (cleaned of its indentation).

    Example:
        >>> @doc('''
        ...     Add one.
        ...     ''')
        ... def inc(x):
        ...     return x + 1
        >>> inc.__doc__
        'Add one.'
    """
    def put(fn):
        fn.__doc__ = inspect.cleandoc(text)
        return fn

    return put
