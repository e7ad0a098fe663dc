"""A task known only through an i.i.d. sampler of labelled data (real data, THEORY §10).

The run study's teacher tasks (:mod:`numerics.data`, :mod:`numerics.empirical`) know
``p(y | x)`` exactly, so the population signal and risks are exact over ``y`` (Monte Carlo
over ``x`` only). A generator of real data such as MNIST-1D (:mod:`numerics.mnist1d`) has
no such conditional: every population quantity is a Monte-Carlo mean over a fresh
*labelled* sample of its own role (THEORY §10), and is reported as an estimate.

* :class:`SampledClassification` -- the teacher tasks' sampling interface (``sample``,
  ``sample_chunks``, ``sample_x``, ``sample_x_chunks``, ``loss``) over a sampler
  ``sampler(n, rng) -> (x, y)``; ``population_is = "estimate"``; no ``soft_targets``.
* :func:`population_is` -- ``"exact"`` (a teacher's ``y``-expectation) or ``"estimate"``.
* :func:`signal_targets` -- the signal sample of ``G`` and ``beta`` with its targets: the
  exact ``y``-expectation of a teacher, or the sample's own labels. Both give unbiased
  ``G`` (the loss gradient is linear in the target); the Hessian of cross-entropy in the
  logits, ``(sum_k p_k) (diag(s) - s s^T)``, is the same for a one-hot label and for
  ``p(. | x)`` (both sum to 1), so ``beta``'s curvature at a readout block at the top does
  not depend on ``y``; below the top it is linear in the target, again unbiased.
* :func:`population_risk_chunks` -- the population sample in chunks, each with its
  per-sample risk function (exact ``E_{y|x} l`` of a teacher: :func:`numerics.data.conditional_risk`,
  bitwise as before; the labelled sample's loss otherwise).
* :func:`mnist1d_task` -- MNIST-1D as such a task (flat float64 signals ``(n, 40)``, 10 classes).
"""
from __future__ import annotations

from typing import Callable, Iterator

import numpy as np
import torch

from numerics.empirical import ChunkedSampling

__all__ = ["ESTIMATE_NOTE", "SAMPLE_CHUNK", "TRUTH_NOTE", "TRUTH_Z", "SampledClassification", "estimate_tolerance",
           "mnist1d_task", "population_is", "population_risk_chunks", "signal_targets"]

#: Chunk of the streamed samples (a multiple of :data:`numerics.mnist1d._CHUNK`: the chunks of a
#: stream are then exactly the rows of one draw of the same size, ``test_sampled_task``).
SAMPLE_CHUNK = 1 << 16
#: The note a result carries when its population quantities are estimates.
ESTIMATE_NOTE = ("population quantities are Monte-Carlo estimates (population_is = 'estimate'): this task has no exact "
                 "teacher, so G and beta are means over the labelled signal sample (role signal) and R_old, R_new, "
                 "R_jump_pop, Delta_R means of per-sample losses over the labelled population sample (role population), "
                 "each with its standard error (THEORY §10).")

#: **Choice**: a validity truth that is itself a Monte-Carlo estimate counts a premise or
#: conclusion on population risks as violated only when its gap is below ``-TRUTH_Z (se_1 + se_2)``,
#: ``se_1 >= se_2`` the two largest standard errors of the truth's risks (``sd(A - B) <= sd(A) + sd(B)``
#: bounds the error of any difference of two of them); ``TRUTH_Z`` is the two-sided normal quantile at 1e-3.
TRUTH_Z = 3.2905267314918945
TRUTH_NOTE = ("the truth is a Monte-Carlo estimate (population_is = 'estimate', no exact teacher): an event or "
              "conclusion on population risks counts as violated only beyond z se, z = 3.29 (two-sided 1e-3), se the "
              "standard error of the truth's combination in the relation on the check_population sample -- paired "
              "(l(f_new) - l(f_old) on the one shared sample, records with truth_cov), else (older records) "
              "truth_mc_tolerance = z (se_1 + se_2), se_1, se_2 the two largest standard errors of the truth's risks; "
              "where that tolerance is not below the bound term an event tests, the event is 'not testable at this "
              "truth size' (validity.json: events.*.testability).")


def estimate_tolerance(task, stderrs) -> dict:
    """``{"truth_mc_tolerance", "truth_mc_z"}`` of a sampled task's truth (:data:`TRUTH_Z`); ``{}`` when exact.

    Args:
        task: the run's task; stderrs: the standard errors of the truth's Monte-Carlo risks.
    """
    if population_is(task) == "exact":
        return {}
    top = sorted((float(s) for s in stderrs), reverse=True)[:2]
    return {"truth_mc_tolerance": TRUTH_Z * sum(top), "truth_mc_z": TRUTH_Z}


class SampledClassification(ChunkedSampling):
    """Classification data known only through an i.i.d. sampler (docstring of ``numerics.sampled_task``).

    Args:
        sampler: ``sampler(n, rng) -> (x (n, d_in) float64, y (n,) long)``: ``n`` i.i.d.
            labelled samples from the ``numpy.random.Generator`` ``rng`` (advanced; global
            random state untouched).
        n_classes: number of classes; d_in: input dimension; name: for messages.

    Example:
        >>> task = mnist1d_task()
        >>> x, y = task.sample(3, seed=0)
        >>> tuple(x.shape), x.dtype, task.population_is
        ((3, 40), torch.float64, 'estimate')
    """

    loss = "cross_entropy"
    population_is = "estimate"

    def __init__(self, sampler: Callable, n_classes: int, d_in: int, name: str):
        self._sampler, self.n_classes, self.d_in, self.name = sampler, int(n_classes), int(d_in), name

    def sample_chunks(self, n: int, seed: int, chunk: int = SAMPLE_CHUNK) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        """``(x, y)`` of ``n`` i.i.d. samples from the stream of ``seed``, in chunks of ``chunk``.

        Raises:
            ValueError: ``n < 1``.
        """
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
            raise ValueError(f"n == {n!r}, must be an integer >= 1.")
        rng = np.random.default_rng(int(seed))
        for start in range(0, n, chunk):
            yield self._sampler(min(chunk, n - start), rng)



def _mnist1d_sampler(n: int, rng: np.random.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    from numerics import mnist1d

    x, y = mnist1d.sample(n, rng, dtype=torch.float64)
    return x.reshape(n, mnist1d.LENGTH), y


def mnist1d_task() -> SampledClassification:
    """MNIST-1D (:func:`numerics.mnist1d.sample`: labels i.i.d., fixed normalisation) as flat
    float64 signals ``(n, 40)``, 10 classes (a ``cnn1d`` model reads them as ``(n, 1, 40)``)."""
    from numerics import mnist1d

    return SampledClassification(_mnist1d_sampler, mnist1d.N_CLASSES, mnist1d.LENGTH, "mnist1d")


def population_is(task) -> str:
    """``"exact"`` (the task knows ``p(y | x)`` / ``E[y | x]``) or ``"estimate"`` (sampled only)."""
    return getattr(task, "population_is", "exact")


def signal_targets(task, n: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``(x (n, ...), targets)`` of the signal sample: the exact ``y``-expectation
    (``task.soft_targets(x)``) of a teacher, or the sample's labels ``(n,)`` (docstring of ``numerics.sampled_task``)."""
    if population_is(task) == "exact":
        x = task.sample_x(n, seed)
        return x, task.soft_targets(x)
    return task.sample(n, seed)


def population_risk_chunks(task, n: int, seed: int) -> Iterator[tuple[torch.Tensor, Callable]]:
    """The population sample of ``seed`` in chunks ``(x, risk)`` with ``risk(out) -> (chunk,)``.

    ``risk`` is the exact conditional risk ``E_{y|x} l(out, y)`` of a teacher
    (:func:`numerics.data.conditional_risk`) or the per-sample loss at the chunk's own labels.
    """
    from numerics._numerics import per_sample_loss
    from numerics.data import conditional_risk

    if population_is(task) == "exact":
        for x in task.sample_x_chunks(n, seed):
            yield x, (lambda out, x=x: conditional_risk(task, x, out))
        return
    for x, y in task.sample_chunks(n, seed):
        yield x, (lambda out, y=y: per_sample_loss(out, y, task.loss))
