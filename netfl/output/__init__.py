"""What a run leaves on disk: run directories (:mod:`~netfl.output.rundir`: reserve,
write atomically, read back, complete or not; :mod:`~netfl.output.run_directory`: one
run's directory through its life) and figures (:mod:`~netfl.output.figures`:
one run's figures, several runs overlaid, the cost-to-target table).

It may import :mod:`netfl.sim` (the result and the checkpoint's location) and
:mod:`netfl.scenario`; matplotlib is imported only when a figure is drawn.
"""
