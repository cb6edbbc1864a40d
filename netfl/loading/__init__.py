"""A scenario with its algorithm: what needs both the scenario schema
(:mod:`netfl.scenario`) and the algorithm registry (:mod:`netfl.algorithms`), one layer
above both.

:mod:`~netfl.loading.plugins` imports a scenario's plugins and installed entry points
(which register algorithms, models, data sets, ...); :mod:`~netfl.loading.scenarios`
reads and validates a scenario file — plugins first, then the schema, then the
algorithm's options and the checks that depend on the algorithm — and gives its JSON
schema and resolved form; :mod:`~netfl.loading.reference` writes the scenario reference
page from that schema.

It may import :mod:`netfl.scenario`, :mod:`netfl.algorithms` and what lies below them
— never torch: validating a scenario is a light verb (``netfl validate``, ``netfl
schema``).
"""
