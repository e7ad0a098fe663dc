"""plumbing: what every layer shares and no layer owns -- the lowest floor, importing nothing of ours.

* :mod:`plumbing.validation` -- constraints as data (:class:`~plumbing.validation.Interval`),
  :class:`~plumbing.validation.InputError`, schema checks of configs.
* :mod:`plumbing.config` -- merging configs, dotted keys.
* :mod:`plumbing.io` -- atomic writes, JSON without inf/nan, versions.
* :mod:`plumbing.store` -- stored results: a folder of records written one by one.
* :mod:`plumbing.figures` -- matplotlib (Agg), saving figures.

:mod:`bounds` (mathematics only) and everything above it import from here.
"""
