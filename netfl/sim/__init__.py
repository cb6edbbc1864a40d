"""One simulation: :mod:`~netfl.sim.world` builds the :class:`~netfl.sim.world.World`
(clock, random streams, nodes, data, models, radio, compute, executor, recorder —
the :class:`~netfl.algorithms.context.RoundContext` algorithms run against) from a
scenario; :mod:`~netfl.sim.runner` drives the algorithm's rounds, stop rules and
checkpoints (:mod:`~netfl.sim.checkpoint`); :mod:`~netfl.sim.accounting` turns the
records into round rows and :mod:`~netfl.core.invariants` checks them;
:mod:`~netfl.sim.result` is the :class:`~netfl.sim.result.RunResult` of tables.

It may import everything below it (scenario, algorithms, radio, compute, learning,
core); nothing here writes files but checkpoints, and nothing draws.
"""
