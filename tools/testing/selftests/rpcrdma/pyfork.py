#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""A fork server for the pyverbs peers of the hostile tests (the shell side is pyfork.sh).

In a TCG guest, starting python3 and importing pyverbs takes seconds, and the hostile tests
start a peer per case (the server's some 50 hostile clients, the client's some 50 hostile
servers). This process imports the peer once, without running
it, and then runs each request in a child forked from it, as `python3 PEER ARG...` would run:
its own process, with its own RDMA resources, which end with it (nothing of the device is
opened before the fork), its own signal handlers and alarms, its exit status.

    pyfork.py PEER.py REQUESTS

REQUESTS is a FIFO; each line of it is one request:

    SECONDS PIDFILE REPLY OUT ERR ARG...

The child runs PEER's main() with sys.argv [PEER, ARG...], standard input /dev/null, standard
output and error OUT and ERR opened for appending (e.g. /proc/PID/fd/1 of the shell that
asked: its pipe or its file). Its pid is written to PIDFILE. After SECONDS (0: no limit) it is
killed (SIGKILL). When it ends, "rc N" is written to the FIFO REPLY: its exit status, 128 plus
the signal that ended it, or 124 if the limit ended it (as timeout(1) reports it). Standard
library only, besides what the peer imports.
"""

import importlib.util
import os
import select
import signal
import sys
import time
import traceback


def child(peer, mod, outp, errp, args):
    """In the forked child: run the peer as its own process would. Never returns."""
    code = 1
    try:
        for sig in (signal.SIGCHLD, signal.SIGALRM, signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, signal.SIG_DFL)
        signal.set_wakeup_fd(-1)
        for fd, path, flags in ((0, "/dev/null", os.O_RDONLY),
                                (1, outp, os.O_WRONLY | os.O_APPEND),
                                (2, errp, os.O_WRONLY | os.O_APPEND)):
            nfd = os.open(path, flags)
            if nfd != fd:
                os.dup2(nfd, fd)
                os.close(nfd)
        sys.argv = [peer] + args
        mod.main()
        code = 0
    except SystemExit as ex:
        if ex.code is None:
            code = 0
        elif isinstance(ex.code, int):
            code = ex.code
        else:
            print(ex.code, file=sys.stderr)
            code = 1
    except BaseException:  # pylint: disable=broad-except
        traceback.print_exc()
        code = 1
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)  # pylint: disable=protected-access


def reply(path, rc):
    """Tell the asker the child's status; nobody reading (the asker gone) is no error."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
    except OSError:
        return
    try:
        os.write(fd, b"rc %d\n" % rc)
    except OSError:
        pass
    finally:
        os.close(fd)


def main():
    peer, requests = sys.argv[1], sys.argv[2]
    spec = importlib.util.spec_from_file_location("pyfork_peer", peer)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    # A SIGCHLD wakes the select() below.
    rfd, wfd = os.pipe()
    os.set_blocking(wfd, False)
    signal.set_wakeup_fd(wfd)
    signal.signal(signal.SIGCHLD, lambda _s, _f: None)
    # Opened for reading and writing: the FIFO never reads as closed between askers.
    req = os.open(requests, os.O_RDWR)
    pending = b""
    children = {}  # pid: [reply path, deadline or None, killed]
    while True:
        now = time.monotonic()
        waits = [d - now for _, d, killed in children.values() if d is not None and not killed]
        timeout = max(0.0, min(waits)) if waits else None
        ready, _, _ = select.select([req, rfd], [], [], timeout)
        if rfd in ready:
            os.read(rfd, 4096)
        if req in ready:
            pending += os.read(req, 65536)
            while b"\n" in pending:
                line, pending = pending.split(b"\n", 1)
                words = line.decode().split()
                if len(words) < 5:
                    continue
                secs, pidfile, rpath, outp, errp = words[:5]
                pid = os.fork()
                if pid == 0:
                    os.close(req)
                    os.close(rfd)
                    os.close(wfd)
                    child(peer, mod, outp, errp, words[5:])
                with open(pidfile, "w") as f:
                    f.write("%d\n" % pid)
                limit = float(secs)
                children[pid] = [rpath, time.monotonic() + limit if limit > 0 else None, False]
        now = time.monotonic()
        for pid, c in children.items():
            if c[1] is not None and now >= c[1] and not c[2]:
                c[2] = True
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        while children:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            c = children.pop(pid, None)
            if c is None:
                continue
            if c[2]:
                rc = 124
            elif os.WIFSIGNALED(status):
                rc = 128 + os.WTERMSIG(status)
            else:
                rc = os.WEXITSTATUS(status)
            reply(c[0], rc)


if __name__ == "__main__":
    main()
