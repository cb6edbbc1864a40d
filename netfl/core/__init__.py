"""Foundations every layer shares: named random streams (:mod:`~netfl.core.rng`), the
flat records radio and compute append (:mod:`~netfl.core.records`), interval arithmetic
on the clock (:mod:`~netfl.core.timeline`) and the nodes of a cell
(:mod:`~netfl.core.nodes`: the BS and the devices, with their compute profile and
energy meter, :mod:`~netfl.core.meter`).

Nothing here imports a netfl package above it (:mod:`netfl.compute` reads a node's
profile and charges its meter; the radio charges its meter too), nor torch or SimPy.
"""
