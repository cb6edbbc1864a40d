"""The command line: :mod:`~netfl.cli.app` holds the parser, ``main`` and the light
verbs (``validate``, ``list``, ``schema``: no torch is imported for them);
:mod:`~netfl.cli.commands` the verbs that simulate and write (``run``, ``sweep``,
``report``, Ctrl-C and SIGTERM). It may import every other part of netfl, each verb
only what it needs, when it runs.
"""

from netfl.cli.app import main

__all__ = ["main"]
