"""The parent of the learner's process: when it ends, every process the learner started ends.

``python supervise.py CONFIG COMMAND...`` runs COMMAND (the probe) and waits for it. Where
Linux allows it the probe runs in namespaces of its own, under an *init* process this file
forks (the "inner" process, PID 1 there):

- a PID namespace: the learner's processes see only each other, so they cannot signal the
  grader or this process, and none outlives the inner process (the kernel kills the whole
  namespace when its init ends; its init ignores SIGKILL and SIGSTOP from inside);
- a mount namespace with its own ``/proc``: the grader's ``/proc/<pid>/fd/1`` is not there;
  and an empty ``/dev/pts``: the user's terminal is not there either (nor is any
  controlling terminal: the grader starts this process in a session of its own);
- a user namespace (the same user id inside), so the learner's code holds no capability
  outside it, and none inside (``drop_privileges``: it cannot unmount what hides them);
- neither this process nor the inner one is dumpable: the learner's processes cannot open
  their pipes through ``/proc/1/fd``, and a status line it could not have written is
  refused anyway (``wait_status``).
- where ``/sys/fs/cgroup`` is writable, a cgroup capping the memory and the number of
  processes of all of them together (v2, or v1's memory and pids controllers).

Where a layer is missing (not Linux, no permission) the probe runs all the same, and the
first line this process writes on the status descriptor says what is missing. Without a PID
namespace this process is a *child subreaper*: any descendant whose parent exits is handed
to it, not to init, and when the probe ends it kills and reaps every descendant it has.
SIGTERM/SIGHUP/SIGINT, or the grader dying (``PR_SET_PDEATHSIG``), end everything the same
way. It then ends the way the probe did (the same exit code or the same signal), and writes
a last status line when the memory cap killed a process. Standard library only: nothing of
the grader's package runs here.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
import time
from pathlib import Path

PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
PR_SET_SECUREBITS = 28
PR_SET_CHILD_SUBREAPER = 36
PR_SET_NO_NEW_PRIVS = 38
SECBIT_NOROOT, SECBIT_NOROOT_LOCKED = 1, 2
CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REC, MS_PRIVATE = 1, 2, 4, 8, 1 << 14, 1 << 18
# Wait statuses of signals that stop a process or are ignored by default: ending this
# process "the way the probe did" with one of them would leave it running (or stopped).
NOT_ENDING = {
    signal.SIGSTOP,
    signal.SIGTSTP,
    signal.SIGTTIN,
    signal.SIGTTOU,
    signal.SIGCONT,
    signal.SIGCHLD,
    signal.SIGURG,
    signal.SIGWINCH,
}
CGROUP = Path("/sys/fs/cgroup")
ALL_NAMESPACES = "PID, mount and user namespaces"
PREFIX = "modelwright-check-"  # a supervisor's cgroup is PREFIX + its process id


def _libc() -> object | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes

        return ctypes.CDLL(None, use_errno=True)
    except (OSError, ImportError):
        return None


def _call(name: str, *args: object) -> str:
    """Call libc's ``name``: "" on success, else the error's words."""
    libc = _libc()
    if libc is None:
        return "not on Linux"
    import ctypes

    function = getattr(libc, name, None)
    if function is None:
        return f"no {name}() here"
    if function(*args) == 0:
        return ""
    return os.strerror(ctypes.get_errno())


def prctl(option: int, value: int) -> bool:
    """Linux's prctl(2), or False where there is none (the group kill still applies)."""
    return _call("prctl", option, value, 0, 0, 0) == ""


# ---------------------------------------------------------------------- namespaces
def enter_namespaces() -> tuple[bool, str]:
    """Make this process's next child the init of a new PID namespace, in a new user
    namespace where allowed: (True, what was made) or (False, why not)."""
    uid, gid = os.getuid(), os.getgid()
    error = _call("unshare", CLONE_NEWUSER | CLONE_NEWPID)
    if not error:
        try:  # the same ids inside: the learner's files stay theirs
            Path("/proc/self/setgroups").write_text("deny")
            Path("/proc/self/uid_map").write_text(f"{uid} {uid} 1")
            Path("/proc/self/gid_map").write_text(f"{gid} {gid} 1")
        except OSError as failure:
            return False, f"user namespace without an id map ({failure.strerror})"
        return True, ALL_NAMESPACES
    # root where user namespaces are off: the PID namespace alone
    if not _call("unshare", CLONE_NEWPID):
        return True, f"PID and mount namespaces (no user namespace: {error})"
    return False, f"no PID namespace ({error})"


def own_mounts() -> str:
    """In the inner process (PID 1 of the new namespace): a mount namespace of its own,
    whose mounts do not leak out, with a /proc that shows only this PID namespace and an
    empty, read-only /dev/pts (no terminal of the user's to open). "" or the error."""
    error = _call("unshare", CLONE_NEWNS)
    if not error:
        error = _call("mount", None, b"/", None, MS_REC | MS_PRIVATE, None)
    flags = MS_NOSUID | MS_NODEV | MS_NOEXEC
    if not error:
        error = _call("mount", b"proc", b"/proc", b"proc", flags, None)
    if not error and Path("/dev/pts").is_dir():
        error = _call("mount", b"none", b"/dev/pts", b"tmpfs", flags | MS_RDONLY, b"mode=000")
        error = error and f"/dev/pts: {error}"
    return error


def drop_privileges() -> None:
    """In the probe, before it starts: no capability survives its exec, even as root in
    its user namespace (so it cannot unmount what hides /proc and /dev/pts), and no
    set-user-id program gives it one back. Where this process holds no capability there
    is none to drop and the calls fail harmlessly."""
    prctl(PR_SET_NO_NEW_PRIVS, 1)
    prctl(PR_SET_SECUREBITS, SECBIT_NOROOT | SECBIT_NOROOT_LOCKED)


# ---------------------------------------------------------------------- cgroups
class Cgroup:
    """A cgroup (v2, or v1's memory and pids hierarchies) holding the learner's processes:
    their memory and their number, counted together."""

    def __init__(self, folders: list[Path], version: int) -> None:
        self.folders = folders
        self.version = version

    @classmethod
    def create(cls, name: str, memory: int, pids: int) -> tuple[Cgroup | None, str]:
        """The cgroup with both limits set, or (None, why not)."""
        made: list[Path] = []
        try:
            own = _own_cgroups()
            if "" in own:  # v2: a folder below this process's own cgroup
                parent = CGROUP / own[""].lstrip("/")
                enabled = (parent / "cgroup.subtree_control").read_text().split()
                if not {"memory", "pids"} <= set(enabled):
                    return None, f"the cgroup {own['']} does not delegate memory and pids"
                version, folders = 2, [parent / name]
            elif "memory" in own and "pids" in own:
                version = 1
                folders = [
                    CGROUP / kind / own[kind].lstrip("/") / name for kind in ("memory", "pids")
                ]
            else:
                return None, "no memory and pids cgroup controllers"
            for folder in folders:
                _remove_stale(folder.parent)
                folder.mkdir()
                made.append(folder)
            if version == 2:
                _write(folders[0] / "memory.max", memory)
                with contextlib.suppress(OSError):  # no swap accounting: nothing to cap
                    _write(folders[0] / "memory.swap.max", 0)
                _write(folders[0] / "pids.max", pids)
            else:
                _write(folders[0] / "memory.limit_in_bytes", memory)
                with contextlib.suppress(OSError):  # memory + swap, where swap is accounted
                    _write(folders[0] / "memory.memsw.limit_in_bytes", memory)
                _write(folders[1] / "pids.max", pids)
            return cls(folders, version), f"cgroup v{version}"
        except OSError as error:
            cls(made, 0).remove()
            return None, f"cgroups not writable here ({error.strerror or error})"

    def join(self, pid: int) -> None:
        for folder in self.folders:
            _write(folder / "cgroup.procs", pid)

    def oom_kills(self) -> int:
        """How many processes the memory cap has killed."""
        name = "memory.events" if self.version == 2 else "memory.oom_control"
        with contextlib.suppress(OSError, ValueError):
            for line in (self.folders[0] / name).read_text().splitlines():
                key, _, count = line.partition(" ")
                if key == "oom_kill":
                    return int(count)
        return 0

    def remove(self) -> None:
        """Remove the (by now empty) cgroup; its last processes may take a moment to go."""
        for folder in self.folders:
            for _ in range(200):
                try:
                    folder.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.005)


def _remove_stale(parent: Path) -> None:
    """Remove the empty cgroups of supervisors that are gone (one killed before it could
    remove its own leaves an empty folder; a cgroup still holding processes stays)."""
    for folder in parent.glob(f"{PREFIX}*"):
        pid = folder.name[len(PREFIX) :]
        if pid.isdigit() and not Path(f"/proc/{pid}").exists():
            with contextlib.suppress(OSError):
                folder.rmdir()


def _own_cgroups() -> dict[str, str]:
    """This process's cgroup in each hierarchy: controller name -> path ("" is v2's)."""
    own: dict[str, str] = {}
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        for controller in controllers.split(","):
            own[controller] = path
    if not (CGROUP / "cgroup.controllers").exists():
        own.pop("", None)  # a hybrid machine's v2 holds no controllers
    return own


def _write(path: Path, value: object) -> None:
    with open(path, "w") as f:
        f.write(str(value))


# ---------------------------------------------------------------------- killing
def descendants(pid: int) -> list[int]:
    """Every living descendant of ``pid``, read from /proc (empty without /proc)."""
    found: list[int] = []
    stack = [pid]
    while stack:
        parent = stack.pop()
        for task in Path(f"/proc/{parent}/task").glob("*"):
            with contextlib.suppress(OSError):
                children = [int(c) for c in (task / "children").read_text().split()]
                found.extend(children)
                stack.extend(children)
    return found


def kill_descendants() -> None:
    """SIGKILL every descendant and reap it, until none is left (a process forking while
    it is killed leaves children that are this process's next round)."""
    for _ in range(1000):
        alive = descendants(os.getpid())
        for pid in alive:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        reaped = False
        with contextlib.suppress(ChildProcessError):
            while os.waitpid(-1, os.WNOHANG)[0] > 0:
                reaped = True
        if not alive and not reaped:
            return
        if alive and not reaped:
            time.sleep(0.001)


class Stop(Exception):
    """A signal asking this process to end (the grader closing the engine)."""


def _stop(signum: int, frame: object) -> None:
    raise Stop


def _no_core() -> None:
    with contextlib.suppress(ImportError, ValueError, OSError):
        import resource

        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


# ---------------------------------------------------------------------- the processes
def limit_resources(memory: int, file_size: int) -> None:
    """The probe's own limits: address space, size of a file it writes, no core file."""
    with contextlib.suppress(ImportError):  # not on POSIX: the parent's timeout still applies
        import resource

        for limit, value in (
            (resource.RLIMIT_AS, memory),
            (resource.RLIMIT_FSIZE, file_size),
            (resource.RLIMIT_CORE, 0),
        ):
            with contextlib.suppress(ValueError, OSError):  # a lower hard limit stays
                resource.setrlimit(limit, (value, value))


def inner(
    command: list[str], config: dict[str, object], namespace: bool, go: int, done: int
) -> None:
    """The inner process: waits until the outer one has put it in the cgroup, mounts its
    /proc (in a namespace), starts the probe, reaps every orphan until the probe ends,
    and writes the probe's wait status to the outer process. Never returns."""
    status = 0
    fds, (memory, _, file_size) = config["fds"], config["limits"]
    try:
        for signum in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):  # PID 1 ignores them
            signal.signal(signum, signal.SIG_DFL)
        prctl(PR_SET_PDEATHSIG, signal.SIGKILL)  # no namespace outlives the outer process
        os.chdir(config["cwd"])  # the learner's folder, where its code runs
        os.read(go, 1)
        os.close(go)
        if namespace:
            error = own_mounts()
            os.write(done, (f"proc {error}" if error else "proc").encode() + b"\n")
        else:
            prctl(PR_SET_CHILD_SUBREAPER, 1)
            os.write(done, b"\n")
        probe = os.fork()
        if probe == 0:
            os.close(done)
            prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
            limit_resources(memory, file_size)
            drop_privileges()
            os.execv(command[0], command)
        for fd in fds:  # the probe's pipe ends: only the probe holds them
            with contextlib.suppress(OSError):
                os.close(fd)
        while True:  # reap orphans handed to us until the probe itself ends
            pid, status = os.waitpid(-1, 0)
            if pid == probe:
                break
        if not namespace:
            kill_descendants()
        os.set_blocking(done, False)  # a pipe filled by someone else cannot hold us
        os.write(done, f"{status}\n".encode())
    finally:
        os._exit(0)  # as PID 1, ending kills what is left in the namespace


def main() -> None:
    _no_core()
    prctl(PR_SET_PDEATHSIG, signal.SIGTERM)  # the grader died: clean up all the same
    for signum in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(signum, _stop)
    if os.getppid() == 1:  # the grader died before prctl took effect
        return
    config = json.loads(sys.argv[1])
    command, fds = sys.argv[2:], config["fds"]
    report = os.fdopen(config["status"], "w", encoding="utf-8")
    subreaper = prctl(PR_SET_CHILD_SUBREAPER, 1)
    memory, processes, _ = config["limits"]
    group, cgroup_note = Cgroup.create(f"{PREFIX}{os.getpid()}", memory, processes)
    status = signal.SIGKILL  # as if killed, until the probe says otherwise
    child = -1
    try:
        namespace, namespace_note = enter_namespaces()
        # Not dumpable (the inner process inherits it, the probe's exec resets it): the
        # learner's processes cannot open this one's or the inner's descriptors through
        # /proc/PID/fd, nor ptrace them, even as root inside the user namespace.
        prctl(PR_SET_DUMPABLE, 0)
        go_read, go_write = os.pipe()
        done_read, done_write = os.pipe()
        child = os.fork()
        if child == 0:
            report.close()
            os.close(go_write)
            os.close(done_read)
            inner(command, config, namespace, go_read, done_write)
        for fd in (*fds, go_read, done_write):
            with contextlib.suppress(OSError):
                os.close(fd)
        if group is not None:
            try:
                group.join(child)
            except OSError as error:
                group.remove()
                group, cgroup_note = None, f"could not join the cgroup ({error.strerror})"
        os.write(go_write, b"g")
        os.close(go_write)
        line, said = read_line(done_read)  # a quick probe's status may come in the same read
        mounted = line.decode(errors="replace").split(" ", 1)
        if namespace and mounted[1:]:
            note = f"no /proc and /dev/pts of its own ({mounted[1].strip()})"
            namespace, namespace_note = False, note
        words = _words(namespace, namespace_note, group, cgroup_note)
        complete = namespace_note == ALL_NAMESPACES and group is not None
        report.write(json.dumps({"isolation": words, "complete": complete}))
        report.write("\n")
        report.flush()
        while True:  # reap orphans handed to us (without a namespace) until inner ends
            pid, _ = os.waitpid(-1, 0) if subreaper else os.waitpid(child, 0)
            if pid == child:
                break
        os.set_blocking(done_read, False)  # the inner process has ended: all it said is there
        with contextlib.suppress(BlockingIOError):
            said += os.read(done_read, 4096)
        status = wait_status(said)
    except Stop:
        status = signal.SIGKILL
    finally:
        for signum in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
            signal.signal(signum, signal.SIG_IGN)
        if child > 0:  # the inner process, and its namespace with it
            with contextlib.suppress(OSError):
                os.kill(child, signal.SIGKILL)
        kill_descendants()
        if group is not None:
            if group.oom_kills():
                with contextlib.suppress(OSError, ValueError):
                    report.write(json.dumps({"memory_cap": True}) + "\n")
                    report.flush()
            group.remove()
    if os.WIFSIGNALED(status):  # end by the same signal (no core file: see _no_core)
        signum = os.WTERMSIG(status)
        with contextlib.suppress(OSError, ValueError):  # SIGKILL's action is fixed
            signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)
    sys.exit(os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 1)


def read_line(fd: int) -> tuple[bytes, bytes]:
    """The first line written to ``fd`` (without its newline) and what came after it in the
    same reads: the inner process's two lines can arrive together when the probe ends
    before the outer process reads the first."""
    said = b""
    while b"\n" not in said:
        chunk = os.read(fd, 4096)
        if not chunk:
            break
        said += chunk
    line, _, rest = said.partition(b"\n")
    return line, rest


def wait_status(said: bytes) -> int:
    """The probe's wait status from the inner process's line, or SIGKILL's when the line
    is not one or is a signal that would not end this process (stopped, or ignored)."""
    line = said.split(b"\n", 1)[0].strip()
    if not line.isdigit() or int(line) > 0xFFFF:
        return signal.SIGKILL
    status = int(line)
    if os.WIFEXITED(status):
        return status
    if os.WIFSIGNALED(status) and 0 < os.WTERMSIG(status) < signal.NSIG:
        return signal.SIGKILL if os.WTERMSIG(status) in NOT_ENDING else status
    return signal.SIGKILL


def _words(namespace: bool, namespace_note: str, group: Cgroup | None, cgroup_note: str) -> str:
    """One line: what keeps the learner's processes apart, and what is missing."""
    if namespace:
        words = f"{namespace_note}; "
    else:
        words = f"own session only ({namespace_note}: its processes can see the grader"
        words += " and reach the terminal); "
    if group is not None:
        words += f"memory and process count capped for all its processes ({cgroup_note})"
    else:
        words += f"memory capped per process only ({cgroup_note})"
    return words


if __name__ == "__main__":
    main()
