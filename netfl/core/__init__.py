"""Foundations every layer shares: named random streams (:mod:`~netfl.core.rng`), the
flat records radio and compute append (:mod:`~netfl.core.records`), interval arithmetic
on the clock (:mod:`~netfl.core.timeline`) and the nodes of a cell
(:mod:`~netfl.core.nodes`: the BS and the devices, with their compute profile and
energy meter).

``rng``, ``records`` and ``timeline`` import nothing of netfl but :mod:`netfl.errors`;
``nodes`` imports :mod:`netfl.compute` (a node's profile and meter). None of them
imports torch or SimPy.
"""
