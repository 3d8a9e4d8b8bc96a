"""Profile a whole Python service, every thread of it, with cProfile.

Put this directory on PYTHONPATH and name an output file in
KINDGI_BENCH_PROFILE; any Python process started so is profiled from its
start, and when it exits (normally or by os._exit, as after a SIGTERM drain) it writes the
merged statistics to that file and the hottest functions to the file + ".txt":

    PYTHONPATH=bench/profiling KINDGI_BENCH_PROFILE=/tmp/ours.prof \\
        KINDGI_PACK_SERVICE_TOKEN=t PORT=0 python3 kindgi_pack_min.py --index bench/pack/index.json

Why not `python -m cProfile`: it profiles only the main thread, a
ThreadingHTTPServer handles each connection in a thread of its own, and
kindgi_pack_min.py re-executes itself (to drop its token from the
environment), which a wrapper script would not survive; PYTHONPATH and a
KINDGI_* variable do.

Each thread is timed by its own CPU time (KINDGI_BENCH_PROFILE_TIMER=wall for
time including waits), so waits in recv/select do not hide the hot path.
Profiling slows a service down several times: read where time goes, not req/s.
bench/run.py --profile DIR runs "ours" this way.
"""

import atexit
import cProfile
import io
import os
import pstats
import threading
import time

TIMERS = {"cpu": time.thread_time, "wall": time.perf_counter}


class _Profiles:
    """A profiler per thread; merged and written at exit."""

    def __init__(self, out, timer):
        self.out = out
        self.timer = timer
        self.finished = []
        self.lock = threading.Lock()
        self.main = cProfile.Profile(timer)

    def wrap(self, run):
        def profiled_run(thread):
            profile = cProfile.Profile(self.timer)
            profile.enable()
            try:
                run(thread)
            finally:
                profile.disable()
                with self.lock:
                    self.finished.append(profile)
        return profiled_run

    def write(self, top=40):
        self.main.disable()
        with self.lock:
            profiles = list(self.finished)
        stats = pstats.Stats(self.main)
        for profile in profiles:
            stats.add(profile)
        stats.dump_stats(self.out)
        text = io.StringIO()
        text.write("pid %d, threads profiled: %d (+ main)\n" % (os.getpid(), len(profiles)))
        report = pstats.Stats(self.out, stream=text)
        report.sort_stats("tottime").print_stats(top)
        report.sort_stats("cumulative").print_stats(top)
        with open(self.out + ".txt", "w") as handle:
            handle.write(text.getvalue())


def _start(out):
    profiles = _Profiles(out, TIMERS.get(os.environ.get("KINDGI_BENCH_PROFILE_TIMER"), time.thread_time))
    threading.Thread.run = profiles.wrap(threading.Thread.run)
    atexit.register(profiles.write)
    exit_now = os._exit

    def write_then_exit(code):
        """kindgi_pack_min.py leaves by os._exit (no atexit): write first."""
        profiles.write()
        exit_now(code)

    os._exit = write_then_exit
    profiles.main.enable()


if os.environ.get("KINDGI_BENCH_PROFILE"):
    _start(os.environ["KINDGI_BENCH_PROFILE"])
