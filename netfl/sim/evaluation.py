"""The server's evaluation of models on the test set, as jobs of the executor."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from netfl.learning.tasks import EvalTask

if TYPE_CHECKING:
    import torch

__all__ = ["evaluate_many"]


def evaluate_many(
    executor: Any,
    n_test: int,
    batch: int,
    items: list[tuple[dict[str, torch.Tensor], str]],
) -> list[tuple[float, float]]:
    """Accuracy and loss of every ``(state, model name)`` on the test set (``n_test``
    samples, batches of ``batch``): on a pool the evaluations run in parallel, and a
    single one is split into runs of whole test batches over the workers. The
    per-batch scores are summed in batch order, so the results are the serial
    executor's (with the same job threads)."""
    batches = -(-n_test // batch)
    workers = getattr(executor, "workers", 1)
    chunks = max(1, min(batches, -(-workers // max(len(items), 1))))
    bounds = [
        (batches * i // chunks * batch, min(batches * (i + 1) // chunks * batch, n_test))
        for i in range(chunks)
    ]
    jobs = [
        [executor.submit(EvalTask(name, state, a, b, batch)) for a, b in bounds]
        for state, name in items
    ]
    from netfl.learning.train import combine_scores

    return [combine_scores([s for job in row for s in job.result()], n_test) for row in jobs]
