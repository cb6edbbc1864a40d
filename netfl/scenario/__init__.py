"""Scenario files: the strict pydantic schema (:mod:`~netfl.scenario.schema`, with its
building blocks :mod:`~netfl.scenario.strict`, the cell section
:mod:`~netfl.scenario.cell` with its profile resolution
:mod:`~netfl.scenario.link_resolution`, the data section :mod:`~netfl.scenario.data_section`, the
devices section :mod:`~netfl.scenario.devices_section` and the network, mobility and
availability sections), YAML reading (:mod:`~netfl.scenario.reading`),
``--set`` overrides and one-line key-path errors (:mod:`~netfl.scenario.files`) and the
registries plugins add to (:mod:`~netfl.scenario.registries`).

It may import :mod:`channel_models`, :mod:`netfl.errors`, the name catalogues of
:mod:`netfl.compute`, :mod:`netfl.learning` and :mod:`netfl.radio` — never the
algorithm registry (:mod:`netfl.algorithms` imports this package: what needs both, the
plugins, ``load_scenario`` and the algorithm's options, is :mod:`netfl.loading`), and
never torch: validating a scenario is a light verb (``netfl validate``, ``netfl
schema``).
"""
