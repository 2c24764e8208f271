"""Per-process CPU of every process that exits while listening: Linux taskstats over generic
netlink (the kernel sends one record per exiting thread to listeners registered for its CPU).

Needs root (or CAP_NET_ADMIN). Each record carries the thread's tid, tgid, parent tgid, comm,
user and system CPU in microseconds (tick-sampled: HZ=250 gives 4 ms samples, unbiased over
many processes), start time, elapsed time and peak RSS. `Listener.records()` returns them in
arrival (exit) order; `bench/tree_usage.py` groups them into the bench's process tree.
"""

import os
import socket
import struct
import threading
import time
from dataclasses import dataclass

NETLINK_GENERIC = 16
GENL_ID_CTRL = 0x10
CTRL_CMD_GETFAMILY = 3
CTRL_ATTR_FAMILY_ID = 1
CTRL_ATTR_FAMILY_NAME = 2
TASKSTATS_CMD_GET = 1
TASKSTATS_CMD_ATTR_REGISTER_CPUMASK = 3
TASKSTATS_CMD_ATTR_DEREGISTER_CPUMASK = 4
TASKSTATS_TYPE_PID = 1
TASKSTATS_TYPE_STATS = 3
TASKSTATS_TYPE_AGGR_PID = 4
NLM_F_REQUEST = 1
NLMSG_ERROR = 2
SO_RCVBUFFORCE = 33
RECEIVE_BUFFER_BYTES = 32 * 1024 * 1024

# struct taskstats (linux/taskstats.h), fields at their fixed offsets since version 11.
COMM = slice(80, 112)
PID_PPID_BTIME = struct.Struct("=III")  # ac_pid, ac_ppid, ac_btime at 128
ETIME_UTIME_STIME = struct.Struct("=QQQ")  # microseconds, at 144
HIWATER_RSS = struct.Struct("=Q")  # KiB, at 200
TGID = struct.Struct("=I")  # at 368
MIN_VERSION = 11


class TaskstatsError(Exception):
    """Taskstats is unavailable (no permission, no kernel support) or records were lost."""


@dataclass(frozen=True)
class ExitRecord:
    tid: int
    tgid: int
    ppid: int
    comm: str
    cpu_us: int  # user + system
    started_at: float  # seconds since the epoch
    exited_at: float  # when the record arrived (time.time())
    peak_rss_kib: int


def _attribute(kind: int, payload: bytes) -> bytes:
    header = struct.pack("=HH", 4 + len(payload), kind)
    return header + payload + b"\0" * (-len(payload) % 4)


def _attributes(data: bytes) -> dict[int, bytes]:
    found: dict[int, bytes] = {}
    offset = 0
    while offset + 4 <= len(data):
        length, kind = struct.unpack_from("=HH", data, offset)
        if length < 4:
            break
        found[kind & 0x3FFF] = data[offset + 4 : offset + length]
        offset += (length + 3) & ~3
    return found


def _message(family: int, command: int, attributes: bytes) -> bytes:
    genl = struct.pack("=BBH", command, 1, 0)
    return struct.pack("=IHHII", 16 + 4 + len(attributes), family, NLM_F_REQUEST, 0, 0) + (
        genl + attributes
    )


def _messages(data: bytes) -> list[tuple[int, bytes]]:
    """(type, payload after the netlink header) of every netlink message in a datagram."""
    found = []
    offset = 0
    while offset + 16 <= len(data):
        length, kind = struct.unpack_from("=IH", data, offset)
        if length < 16:
            break
        found.append((kind, data[offset + 16 : offset + length]))
        offset += (length + 3) & ~3
    return found


def parse_stats(stats: bytes, arrived: float) -> ExitRecord | None:
    (version,) = struct.unpack_from("=H", stats, 0)
    if version < MIN_VERSION or len(stats) < TGID.size + 368:
        return None
    pid, ppid, btime = PID_PPID_BTIME.unpack_from(stats, 128)
    _etime, utime, stime = ETIME_UTIME_STIME.unpack_from(stats, 144)
    (rss,) = HIWATER_RSS.unpack_from(stats, 200)
    (tgid,) = TGID.unpack_from(stats, 368)
    comm = stats[COMM].split(b"\0", 1)[0].decode(errors="replace")
    return ExitRecord(pid, tgid or pid, ppid, comm, utime + stime, float(btime), arrived, rss)


class Listener:
    """Collects exit records on a background thread from `start()` until `stop()`."""

    def __init__(self) -> None:
        self._socket: socket.socket | None = None
        self._family = 0
        self._cpus = f"0-{(os.cpu_count() or 1) - 1}".encode() + b"\0"
        self._records: list[ExitRecord] = []
        self._lost = False
        self._thread: threading.Thread | None = None
        self._stopping = threading.Event()

    def start(self) -> None:
        try:
            sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_GENERIC)
            sock.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, RECEIVE_BUFFER_BYTES)
            sock.bind((0, 0))
            self._socket = sock
            self._family = self._family_id()
            self._request(TASKSTATS_CMD_ATTR_REGISTER_CPUMASK)
        except (OSError, TaskstatsError) as error:
            self.close()
            raise TaskstatsError(f"taskstats unavailable: {error}") from None
        sock.settimeout(0.2)
        self._thread = threading.Thread(target=self._receive, name="taskstats", daemon=True)
        self._thread.start()

    def _family_id(self) -> int:
        assert self._socket is not None
        name = _attribute(CTRL_ATTR_FAMILY_NAME, b"TASKSTATS\0")
        self._socket.send(_message(GENL_ID_CTRL, CTRL_CMD_GETFAMILY, name))
        for kind, payload in _messages(self._socket.recv(65536)):
            if kind == NLMSG_ERROR:
                (code,) = struct.unpack_from("=i", payload, 0)
                raise TaskstatsError(f"family lookup failed: {os.strerror(-code)}")
            family = _attributes(payload[4:]).get(CTRL_ATTR_FAMILY_ID)
            if family is not None:
                return struct.unpack("=H", family[:2])[0]
        raise TaskstatsError("no TASKSTATS netlink family")

    def _request(self, attribute: int) -> None:
        assert self._socket is not None
        self._socket.send(
            _message(self._family, TASKSTATS_CMD_GET, _attribute(attribute, self._cpus))
        )

    def _receive(self) -> None:
        assert self._socket is not None
        while True:
            try:
                data = self._socket.recv(1 << 20)
            except TimeoutError:
                if self._stopping.is_set():  # deregistered, and what was queued is read
                    return
                continue
            except OSError:  # ENOBUFS: the kernel dropped records
                self._lost = True
                continue
            arrived = time.time()
            for kind, payload in _messages(data):
                if kind != self._family:
                    continue
                aggregate = _attributes(payload[4:]).get(TASKSTATS_TYPE_AGGR_PID)
                stats = _attributes(aggregate or b"").get(TASKSTATS_TYPE_STATS)
                record = parse_stats(stats, arrived) if stats else None
                if record is not None:
                    self._records.append(record)

    def stop(self) -> list[ExitRecord]:
        """Stop listening; the records in exit order. Raises when the kernel dropped any.
        The records still queued in the socket when it deregisters are read first: the last
        processes to exit (the orchestrator, the relay, PostgreSQL) are among them."""
        if self._socket is not None:
            try:
                self._request(TASKSTATS_CMD_ATTR_DEREGISTER_CPUMASK)
            except OSError:
                pass
        self._stopping.set()
        if self._thread is not None:
            self._thread.join()
        self.close()
        if self._lost:
            raise TaskstatsError("the kernel dropped taskstats records (receive buffer overrun)")
        return list(self._records)

    def close(self) -> None:
        if self._socket is not None:
            self._socket.close()
            self._socket = None
