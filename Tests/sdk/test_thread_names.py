"""The release daemon's own threads carry names the kernel shows (`top -H`, `ps -L`, perf, /proc/<pid>/task/*/comm),
so that an operator, and the bench's CPU-by-thread note, can tell the store's flusher and indexer, the admin socket
and the outbound HTTP client from libmicrohttpd's threads and the Swift pool."""
import pathlib


def thread_names(pid):
    names = []
    for comm in pathlib.Path("/proc/%d/task" % pid).glob("*/comm"):
        try:
            names.append(comm.read_text().strip())
        except OSError:  # a thread that ended meanwhile
            pass
    return names


def test_the_daemons_own_threads_are_named(daemon):
    names = thread_names(daemon.process.pid)
    for expected in ("cv-flusher", "cv-indexer", "cv-admin", "cv-outbound", "MHD-worker"):
        assert expected in names, (expected, sorted(names))
    assert all(len(name.encode()) <= 15 for name in names)
