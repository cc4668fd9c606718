"""A stand-in for `python -m kgen.sandbox.worker --serve`: the same protocol, no GPU.

The candidate's "binary" says what to do: pass, wrong, launch (launch_error), crash (then exit, as
the real worker does), die (exit without a result), hang, sleep (0.4 s, then pass), quit (pass,
then exit 0.5 s later, between candidates). Every answer
names the process that gave it, so tests can tell a warm worker from a fresh one.
Arguments: LOG_DIR (where each process notes its pid, CUDA_VISIBLE_DEVICES and the peaks it was
handed), `--canary=fail` to make the start-up canary fail, and `--die-with-parent` to be
SIGKILLed when the thread that started it ends, as bubblewrap's --die-with-parent does
(PR_SET_PDEATHSIG: the "parent" is the creating thread, not its process).
"""

import json
import os
import sys
import time
from pathlib import Path

work = Path.cwd()
if "--die-with-parent" in sys.argv:
    import ctypes
    import signal

    PR_SET_PDEATHSIG = 1
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def write(path: Path, data: dict) -> None:
    tmp = path.with_name("." + path.name + ".tmp")
    tmp.write_text(json.dumps(data))
    os.replace(tmp, path)


with open(Path(sys.argv[1]) / f"{os.getpid()}.json", "w") as env:
    json.dump({"pid": os.getpid(), "cuda": os.environ.get("CUDA_VISIBLE_DEVICES"),
               "peaks": (work / "peaks.json").read_text() if (work / "peaks.json").exists()
               else None}, env)
canary = "fail" if "--canary=fail" in sys.argv else "pass"
write(work / "ready" / "result.json", {"verdict": "pass" if canary == "pass" else "wrong",
                                       "message": f"canary {canary}", "device": "stand-in"})
if canary != "pass":
    sys.exit(0)
served = 0
while line := sys.stdin.readline():
    kind, _, name = line.strip().partition(" ")
    job = work / name
    if kind == "canary":
        write(job / "result.json", {"verdict": "pass", "message": "canary", "device": "stand-in"})
        continue
    what = (job / "kernel.cubin").read_bytes().decode()
    served += 1
    if what == "hang":
        time.sleep(1000)
    if what == "die":
        print("the stand-in dies", flush=True)
        os._exit(3)
    if what == "sleep":
        time.sleep(0.4)
    verdict = {"crash": "crash", "wrong": "wrong", "launch": "launch_error"}.get(what, "pass")
    write(job / "result.json", {"verdict": verdict, "message": f"pid={os.getpid()} "
                                f"served={served}", "extra": {"peaks": {"bandwidth:": 4.2e12}}})
    if verdict == "crash":
        os._exit(0)
    if what == "quit":
        time.sleep(0.5)
        print("the stand-in quits", flush=True)
        os._exit(0)
