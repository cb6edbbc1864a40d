"""Scenario files: the strict pydantic schema (:mod:`~netfl.scenario.schema`, with its
building blocks :mod:`~netfl.scenario.strict`, the cell section
:mod:`~netfl.scenario.cell` with its profile resolution
:mod:`~netfl.scenario.link_resolution`, the data section :mod:`~netfl.scenario.data_section` and the
network, mobility and availability sections) and the files themselves (:mod:`~netfl.scenario.files`:
YAML reading, ``--set`` overrides, one-line key-path errors, the algorithm's options,
the JSON schema and the resolved form).

It may import :mod:`channel_models`, :mod:`netfl.errors`, the name catalogues of
:mod:`netfl.compute` and :mod:`netfl.learning` and the algorithm registry — never torch:
validating a scenario is a light verb (``netfl validate``, ``netfl schema``).
"""
