"""Studies: experiments a user runs end to end, each one module (STYLE: Studies).

Each study reads the primitives of :mod:`numerics` (models, insertion, data, training,
estimators, seeding, builders) and :mod:`bounds`; studies call each other only through
public functions or stored results, never in a circle (``tests/test_layers.py``).

* :mod:`numerics.studies.run` -- one experiment: train, insert, measure, certify.
* :mod:`numerics.studies.validity` -- every guarantee of a setup tested over many draws.
* :mod:`numerics.studies.sweeps` -- resumable grids of run configs.
* :mod:`numerics.studies.growth` -- growth vs training from scratch (Paper B).
* :mod:`numerics.studies.scaling` -- Appendix M fits, predicted vs observed curves, the figures.
* :mod:`numerics.studies.reproduce` -- every empirical claim of THEORY §8-§9, decided by fixed rules.
"""
