"""Client executors that run a round's device jobs in parallel: a local process pool
or Ray actors (on this machine or a cluster).

They keep the seam of :class:`~netfl.learning.executor.SerialExecutor`: a SimPy
process submits a job when its compute step begins and takes the result when
the step ends in simulated time, so the simulated clock never depends on how
fast the host is. Every worker holds the :class:`LearningContext` (training
tensors, model builders) once, set when it starts; a job carries only its
model state, indices and seed.

A job is a pure function of its inputs *and of torch's intra-op thread count*
(the order of float sums inside matrix products depends on it). Every worker
runs with ``threads`` threads, so a run is bit-identical to the serial executor
when that runs with the same count (``learning.num_threads``; tested).

Model states that jobs start from (a round's global state, carried by every
device's job) do not travel through the pool's pipe: the process pool writes
each distinct state once into a shared-memory segment and a job carries its
name (a worker copies the tensors out); Ray puts it into the object store once.
"""

from __future__ import annotations

import gc
import os
import pickle
import signal
import threading
import weakref
from collections import deque
from concurrent.futures import CancelledError, Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from multiprocessing import get_context
from typing import Any

import torch

from netfl.core.usercode import add_user_code, attributed, user_code_labels
from netfl.errors import UserCodeError, WorkerLost
from netfl.learning.executor import LearningContext, SerialExecutor
from netfl.learning.tasks import Task
from netfl.learning.transport import (
    SharedState,
    SharedStates,
    encode,
    map_refs,
    map_states,
    read_shared,
    state_key,
)

__all__ = [
    "ProcessExecutor",
    "RayExecutor",
    "default_threads",
    "import_ray",
    "make_executor",
    "mp_context",
    "start_workers",
]


def default_threads(workers: int) -> int:
    """Intra-op threads per worker: this machine's cores shared among the workers
    (oversubscribed OpenMP threads slow every job many-fold)."""
    return max(1, (os.cpu_count() or 1) // max(1, workers))


# -- local process pool ---------------------------------------------------------


def mp_context(method: str | None = None):
    """How local worker processes start: forked from this process (``NETFL_MP_START``:
    ``fork``, the default; ``forkserver`` or ``spawn`` to start clean ones). A forked
    worker inherits the imported torch and netfl and the data already built, so it
    starts in milliseconds where a spawned one imports torch again (seconds); a job
    sets its own torch threads, so nothing of the parent's thread pool is used."""
    return get_context(method or os.environ.get("NETFL_MP_START", "fork"))


def start_workers(pool: ProcessPoolExecutor, count: int) -> None:
    """Start ``count`` workers of ``pool`` now. While they fork, the objects of this
    process are frozen out of the garbage collector's sight: a forked worker's collector
    would otherwise touch every inherited object and copy the parent's pages one by one."""
    gc.freeze()
    try:
        for _ in range(count):
            pool.submit(int)
    finally:
        gc.unfreeze()


_WORKER_CONTEXT: LearningContext | None = None


def _init_worker(
    context: LearningContext, threads: int, user_code: dict[str, str] | None = None
) -> None:
    global _WORKER_CONTEXT
    for where, label in (user_code or {}).items():  # (a spawned worker knows none yet)
        add_user_code(where, label)
    # Ctrl-C reaches the whole process group: only the simulator handles it (it writes
    # the finished rounds and stops the pool); SIGTERM ends a worker at once
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    torch.set_num_threads(threads)
    _WORKER_CONTEXT = context


def _run_in_worker(payload: bytes) -> bytes:
    assert _WORKER_CONTEXT is not None, "worker started without its context"
    task = map_refs(pickle.loads(payload), SharedState, read_shared)
    # (a traceback does not cross processes: user code's failure is named here, where
    # its frames are; SystemExit & co. become one error, not the end of the worker)
    with attributed(f"a {type(task).__name__} job"):
        return encode(_WORKER_CONTEXT.run(task))


class _Job(Future):
    """A job of :class:`ProcessExecutor`: queued here until a slot in the pool frees.

    Waiting on a job that is still queued moves it to the head of the queue, so the
    job the simulation needs next is the next one sent.
    """

    def __init__(self, executor: ProcessExecutor, task: Task):
        super().__init__()
        self.executor, self.task = executor, task
        self.shared: list[tuple] = []  # the shared states it uses, once sent

    def result(self, timeout: float | None = None) -> Any:
        self.executor._promote(self)
        return super().result(timeout)


class ProcessExecutor:
    """Jobs on a pool of ``workers`` local processes with ``threads`` threads each.

    Workers start by :func:`mp_context` (forked by default) and get the context once.
    At most ``in_flight`` jobs are in the pool at a time (default: 4 per worker): the
    others wait here as tasks, encoded only when a dispatcher thread sends them, so a
    round of 1,000 devices does not hold 1,000 encoded copies of the global model.
    The model states a job starts from go through shared memory, written once per
    distinct state (:class:`SharedStates`): sending a 0.8 MB state through the
    pool's pipe cost 1.7 ms of this process's CPU per job, a shared one 0.08 ms.
    """

    def __init__(
        self, context: LearningContext, workers: int, threads: int, in_flight: int | None = None
    ):
        # CUDA cannot be used in a forked child of a process that has initialised it
        ctx = mp_context("spawn" if context.device.type == "cuda" else None)
        self.workers, self.threads = workers, threads
        self.in_flight = in_flight or 4 * workers
        self.shared = SharedStates()
        # segments are unlinked at close, or when this executor is collected or the
        # interpreter exits without closing it
        self._finalizer = weakref.finalize(self, self.shared.close)
        self._pool = ProcessPoolExecutor(
            workers,
            mp_context=ctx,
            initializer=_init_worker,
            initargs=(context, threads, user_code_labels()),
        )
        start_workers(self._pool, workers)  # now, not at the first job
        self._cv = threading.Condition()
        self._queue: deque[_Job] = deque()
        self._sent = 0  # jobs in the pool now
        self.most_sent = 0  # the most jobs ever in the pool at once
        self._closed = False
        # jobs are sent from a thread of their own: the pool's callbacks run on its
        # manager thread, which must not submit (it would wait on its own wake-up pipe)
        self._dispatcher = threading.Thread(
            target=self._dispatch, name="netfl-dispatch", daemon=True
        )
        self._dispatcher.start()

    def submit(self, task: Task) -> Future:
        job = _Job(self, task)
        with self._cv:
            if self._closed:
                raise RuntimeError("the process executor is closed")
            self._queue.append(job)
            self._cv.notify_all()
        return job

    def _promote(self, job: _Job) -> None:
        with self._cv:
            if self._queue and self._queue[0] is not job and job in self._queue:
                self._queue.remove(job)
                self._queue.appendleft(job)

    def _dispatch(self) -> None:
        while True:
            with self._cv:
                while not self._closed and (not self._queue or self._sent >= self.in_flight):
                    self._cv.wait()
                if self._closed:
                    return
                job = self._queue.popleft()
                self._sent += 1
                self.most_sent = max(self.most_sent, self._sent)
            try:
                task, job.shared = self.shared.share(job.task)
                inner = self._pool.submit(_run_in_worker, encode(task))
            except BaseException as err:  # noqa: BLE001 - e.g. a broken pool: the job fails
                self._finished(job, None, err)
                continue
            job.task = None  # sent: the job no longer keeps its inputs alive
            inner.add_done_callback(lambda f, job=job: self._finished(job, f))

    def _finished(self, job: _Job, inner: Future | None, err: BaseException | None = None) -> None:
        with self._cv:
            self._sent -= 1
            self._cv.notify_all()
        self.shared.release(job.shared)
        job.shared = []
        if inner is not None:
            err = CancelledError() if inner.cancelled() else inner.exception()
        if job.done():  # cancelled by close()
            return
        if isinstance(err, BrokenProcessPool):
            lost = WorkerLost(
                "a worker process of the process executor ended abruptly: killed (e.g. by "
                "the out-of-memory killer) or crashed; lower learning.workers or the "
                "model/batch size, or use learning.executor: serial"
            )
            lost.__cause__ = err
            err = lost
        if err is not None:
            job.set_exception(err)
        else:
            job.set_result(pickle.loads(inner.result()))

    def close(self) -> None:
        with self._cv:
            self._closed = True
            queued, self._queue = list(self._queue), deque()
            self._cv.notify_all()
        for job in queued:
            job.cancel()
        self._dispatcher.join()
        self._pool.shutdown(wait=True, cancel_futures=True)
        self._finalizer()  # the shared states' segments


# -- Ray actors -----------------------------------------------------------------


class _RayWorker:
    """One Ray actor: the learning context, set once, and ``threads`` torch threads."""

    def __init__(
        self, context: LearningContext, threads: int, user_code: dict[str, str] | None = None
    ):
        torch.set_num_threads(threads)
        self.context = context
        for where, label in (user_code or {}).items():  # (the driver's, where they exist)
            add_user_code(where, label)

    def run(self, task: Task) -> Any:
        # (named here, where the user code's frames are: a traceback stays in the actor)
        with attributed(f"a {type(task).__name__} job"):
            return self.context.run(_fetch_states(task))


@dataclass(frozen=True)
class _Stored:
    """A model state that a job refers to in Ray's object store (put once per object)."""

    ref: Any


def _fetch_states(task: Task) -> Task:
    """The job with its stored states fetched (on the actor)."""
    import ray

    return map_refs(task, _Stored, lambda stored: ray.get(stored.ref))


class RayExecutor:
    """Jobs on ``workers`` Ray actors, each declaring ``threads`` CPUs.

    ``address``: an existing cluster (``"auto"``, ``"ray://host:10001"``); ``None``
    starts Ray on this machine unless it is already running in this process. A job
    goes to the actor with the fewest jobs in flight; a model state that several jobs
    carry (the round's global state) goes into the object store once. ``workers=None``:
    as many actors as the cluster has CPUs for.
    """

    def __init__(
        self,
        context: LearningContext,
        workers: int | None,
        threads: int,
        address: str | None = None,
    ):
        ray, self._own_ray = start_ray(address)
        if workers is None:
            workers = max(1, int(ray.cluster_resources().get("CPU", 1)) // threads)
        self.workers, self.threads = workers, threads
        ref = ray.put(context)
        actor = ray.remote(num_cpus=threads)(_RayWorker)
        labels = user_code_labels()
        self._actors = [actor.remote(ref, threads, labels) for _ in range(workers)]
        self._busy = [0] * workers
        self._lock = threading.Lock()
        self._ray = ray
        self._stored: dict[tuple, tuple[Any, Any]] = {}  # state key → (state, its reference)
        self.puts = 0  # states put into the object store

    def _store(self, task: Task) -> Task:
        """The job with each model state it carries replaced by a reference to one copy
        in the object store: a round's devices all start from the same global state,
        which then crosses to the cluster once, not once per device."""

        def put(state: dict[str, torch.Tensor]) -> _Stored:
            key = state_key(state)
            if key not in self._stored:
                if len(self._stored) >= 8:  # the oldest: a previous round's state
                    self._stored.pop(next(iter(self._stored)))
                self.puts += 1  # (the object itself is kept: its id stays unique)
                self._stored[key] = (state, self._ray.put(state))
            return _Stored(self._stored[key][1])

        return map_states(task, put)

    def submit(self, task: Task) -> Future:
        with self._lock:
            i = min(range(len(self._actors)), key=self._busy.__getitem__)
            self._busy[i] += 1
            task = self._store(task)
        inner = self._actors[i].run.remote(task).future()
        outer: Future = Future()

        def done(f: Future, i: int = i) -> None:
            with self._lock:
                self._busy[i] -= 1
            if f.cancelled():
                outer.cancel()
                return
            err = f.exception()
            if isinstance(err, self._ray.exceptions.RayActorError):
                lost = WorkerLost(
                    f"a Ray actor of the ray executor died ({type(err).__name__}): its "
                    "process was killed (e.g. out of memory) or its node left the cluster"
                )
                lost.__cause__ = err
                outer.set_exception(lost)
            elif isinstance(err, UserCodeError):  # (Ray's wrapper: its str holds a traceback)
                cause = getattr(err, "cause", None)
                outer.set_exception(cause if isinstance(cause, UserCodeError) else err)
            elif err is not None:
                outer.set_exception(err)
            else:
                outer.set_result(f.result())

        inner.add_done_callback(done)
        return outer

    def close(self) -> None:
        for a in self._actors:
            self._ray.kill(a)
        self._actors = []
        if self._own_ray:
            self._ray.shutdown()


def import_ray():
    try:
        import ray
    except ImportError:
        raise ImportError("Ray is not installed: pip install 'netfl[ray]'") from None
    return ray


def start_ray(address: str | None) -> tuple[Any, bool]:
    """Ray, started on this machine (``address=None``) or connected to the cluster at
    ``address`` unless this process already runs it: ``(ray, whether we started it)``.
    A cluster that cannot be reached is a one-line ``ConnectionError``."""
    ray = import_ray()
    if ray.is_initialized():
        return ray, False
    try:
        # (ray.init installs a SIGTERM handler of its own that exits: the CLI's, which
        # stops the run keeping its finished rounds, is put back)
        on_term = signal.getsignal(signal.SIGTERM)
        ray.init(address=address, include_dashboard=False, log_to_driver=False)
        if on_term is not None and threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGTERM, on_term)
    except (ConnectionError, TimeoutError, ValueError, RuntimeError) as err:
        where = f"the Ray cluster at {address}" if address else "Ray on this machine"
        first = str(err).strip().splitlines()[0] if str(err).strip() else ""
        raise ConnectionError(f"cannot reach {where} ({type(err).__name__}: {first})") from None
    return ray, True


def make_executor(
    context: LearningContext, learning
) -> SerialExecutor | ProcessExecutor | RayExecutor:
    """The executor a scenario's ``learning`` section asks for (``executor``,
    ``workers``, ``num_threads``, ``ray_address``)."""
    kind = learning.executor
    if kind == "serial":
        return SerialExecutor(context)
    if kind == "batched":
        from netfl.learning.batched import BatchedExecutor

        return BatchedExecutor(context)
    if kind == "process":
        workers = learning.workers or max(1, (os.cpu_count() or 1) // (learning.num_threads or 1))
        return ProcessExecutor(context, workers, learning.num_threads or default_threads(workers))
    threads = learning.num_threads or (default_threads(learning.workers) if learning.workers else 1)
    return RayExecutor(context, learning.workers, threads, learning.ray_address)
