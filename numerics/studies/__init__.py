"""Studies: experiments a user runs end to end, each one module (STYLE: Studies).

Each study reads the primitives of :mod:`numerics` (models, insertion, data, training,
estimators, seeding, builders) and :mod:`bounds`; studies call each other only through
public functions or stored results, never in a circle (``tests/test_layers.py``).

* :mod:`numerics.studies.run` -- one experiment: train, insert, measure, certify.
* :mod:`numerics.studies.validity` -- every guarantee of a setup tested over many draws.
* :mod:`numerics.studies.sweeps` -- resumable grids of run configs.
* :mod:`numerics.studies.growth` -- growth vs training from scratch (Paper B); growth to
  saturation, AG_max and local insertion against depth, optimiser invariance.
* :mod:`numerics.studies.saturation` -- Paper B's saturation scan and test on any network.
* :mod:`numerics.interop.gromo` -- GroMo's statistics as our scores, test and gain bounds.
* :mod:`numerics.studies.reproduce` -- every empirical claim of THEORY §8-§9, decided by fixed rules.
"""
