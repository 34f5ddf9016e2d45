"""Several processes creating, writing and reading one store at once: nothing lost, no exception."""

import multiprocessing
import traceback

from ccr.keys import make_key
from ccr.store import CCRStore

WORKERS = 8
STORES = 8  # each one is created by racing workers (the first open switches it to WAL)
ROUNDS = 8


def _texts(worker: int, round_: int) -> list[str]:
    own = [f"worker {worker} round {round_} item {i}\n" * 40 for i in range(4)]
    shared = [f"shared by everyone, item {round_}\n" * 40]  # concurrent upserts of one key
    return own + shared


def _work(directories: list[str], worker: int, start, results) -> None:
    try:
        for directory in directories:
            start.wait(timeout=20)  # all workers open the not-yet-existing store at the same moment
            _fill(CCRStore(directory), worker)
        results.put(None)
    except Exception:  # noqa: BLE001 - any failure in the worker is reported to the test
        results.put(traceback.format_exc())


def _fill(store: CCRStore, worker: int) -> None:
    with store:
        for round_ in range(ROUNDS):
            texts = _texts(worker, round_)
            if round_ % 2:
                with store.batch():
                    keys = [store.put(t, hint=f"re-run worker {worker}") for t in texts]
            else:
                keys = [store.put(t) for t in texts]
            for key, text in zip(keys, texts):
                found = store.get(key)
                assert found.text == text, f"worker {worker}: {key} read back as {found.status}"


def test_processes_create_put_and_get_concurrently(tmp_path):
    directories = [str(tmp_path / f"home{i}" / "ccr") for i in range(STORES)]
    methods = multiprocessing.get_all_start_methods()
    context = multiprocessing.get_context("fork" if "fork" in methods else "spawn")
    start, results = context.Barrier(WORKERS), context.Queue()
    workers = [context.Process(target=_work, args=(directories, w, start, results)) for w in range(WORKERS)]
    for process in workers:
        process.start()
    errors = [results.get(timeout=120) for _ in workers]
    for process in workers:
        process.join(timeout=10)
    assert errors == [None] * WORKERS
    expected = {make_key(t): t for w in range(WORKERS) for r in range(ROUNDS) for t in _texts(w, r)}
    for directory in directories:
        with CCRStore(directory) as store:
            assert all(store.get(k).text == t for k, t in expected.items())
            assert store.stats().entries == len(expected)
