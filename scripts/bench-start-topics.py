#!/usr/bin/env python3
"""Start of `skiff standalone` with many topics and groups (docs/benchmarks.md, issue 8 item 2).

  scripts/bench-start-topics.py [--topics N] [--groups N] [--rounds N] [--work DIR] BIN...

Writes config/topics.json (N topics, 4 queues each) and config/subscriptionGroup.json, starts
the first BIN once so that the files are in Skiff's own format (system topics added; a start
then rewrites nothing), and keeps those two files as the seed. Then, ROUNDS times, runs every
BIN in turn on a fresh copy of the seed and prints, at its "standalone is ready" line: the time
from exec, the process's CPU (user + system), its RSS, how many topics the name server lists
right then (GET_ALL_TOPIC_LIST_FROM_NAMESERVER), and the 1-minute load average before and after.
"""
import argparse
import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import time


def write_seed(config_dir, topics, groups):
    os.makedirs(config_dir, exist_ok=True)
    table = {
        f"scale-topic-{i}": {"topicName": f"scale-topic-{i}", "readQueueNums": 4,
                             "writeQueueNums": 4, "perm": 6}
        for i in range(topics)
    }
    with open(os.path.join(config_dir, "topics.json"), "w") as f:
        json.dump({"topicConfigTable": table, "dataVersion": {"counter": 1, "timestamp": 0}}, f)
    group_table = {
        f"scale-group-{i}": {"groupName": f"scale-group-{i}", "consumeEnable": True,
                             "consumeFromMinEnable": True, "consumeBroadcastEnable": True,
                             "retryQueueNums": 1, "retryMaxTimes": 16, "brokerId": 0,
                             "whichBrokerWhenConsumeSlowly": 1,
                             "notifyConsumerIdsChangedEnable": True}
        for i in range(groups)
    }
    with open(os.path.join(config_dir, "subscriptionGroup.json"), "w") as f:
        json.dump({"subscriptionGroupTable": group_table,
                   "dataVersion": {"counter": 1, "timestamp": 0}}, f)


def topics_listed(addr):
    """GET_ALL_TOPIC_LIST_FROM_NAMESERVER (206): how many topics the name server routes."""
    host, port = addr.rsplit(":", 1)
    header = json.dumps({"code": 206, "flag": 0, "language": "JAVA", "opaque": 1,
                         "serializeTypeCurrentRPC": "JSON", "version": 0,
                         "extFields": {}}).encode()
    with socket.create_connection((host, int(port)), timeout=60) as s:
        s.sendall(struct.pack(">II", 4 + len(header), len(header)) + header)

        def read(n):
            buf = b""
            while len(buf) < n:
                chunk = s.recv(n - len(buf))
                if not chunk:
                    raise EOFError("name server closed the connection")
                buf += chunk
            return buf

        total, header_len = struct.unpack(">II", read(8))
        header_len &= 0xFFFFFF
        read(header_len)
        body = read(total - 4 - header_len)
    return len(json.loads(body)["topicList"]) if body else 0


def load_average():
    with open("/proc/loadavg") as f:
        return f.read().split()[0]


def start(binary, data, log):
    """Runs BIN standalone on `data` until ready; returns the measurements and the process."""
    tick = os.sysconf("SC_CLK_TCK")
    t0 = time.monotonic()
    proc = subprocess.Popen(
        [binary, "standalone", "--data", data, "--namesrv-listen", "127.0.0.1:0",
         "--broker-listen", "127.0.0.1:0"],
        stdout=subprocess.PIPE, stderr=log)
    wall = cpu = rss = namesrv = None
    for line in proc.stdout:
        if b"standalone is ready" in line:
            wall = time.monotonic() - t0
            with open(f"/proc/{proc.pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            cpu = (int(fields[11]) + int(fields[12])) / tick
            with open(f"/proc/{proc.pid}/status") as f:
                rss = next(int(l.split()[1]) for l in f if l.startswith("VmRSS")) // 1024
        elif wall is not None and b"name server" in line:
            namesrv = line.split()[-1].decode()
            break
    if namesrv is None:
        proc.kill()
        proc.wait()
        sys.exit(f"{binary} did not get ready (see its log)")
    return wall, cpu, rss, namesrv, proc


def stop(proc):
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=120)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--topics", type=int, default=100_000)
    parser.add_argument("--groups", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--work", default=os.path.join(os.environ.get("TMPDIR", "/tmp"),
                                                       "skiff-bench-start"))
    parser.add_argument("binaries", nargs="+")
    args = parser.parse_args()

    shutil.rmtree(args.work, ignore_errors=True)
    seed, data = os.path.join(args.work, "seed"), os.path.join(args.work, "data")
    first = os.path.join(args.work, "first")
    write_seed(os.path.join(first, "config"), args.topics, args.groups)
    with open(os.path.join(args.work, "first.log"), "w") as log:
        stop(start(args.binaries[0], first, log)[4])
    os.makedirs(os.path.join(seed, "config"))
    for name in ("topics.json", "subscriptionGroup.json"):
        shutil.copy(os.path.join(first, "config", name), os.path.join(seed, "config", name))
    shutil.rmtree(first)

    print("binary\texec_to_ready_s\tcpu_s\trss_mb\trouted_at_ready\tload_before\tload_after")
    for _ in range(args.rounds):
        for i, binary in enumerate(args.binaries):
            shutil.rmtree(data, ignore_errors=True)
            shutil.copytree(seed, data)
            before = load_average()
            with open(os.path.join(args.work, f"bin{i}.log"), "w") as log:
                wall, cpu, rss, namesrv, proc = start(binary, data, log)
                routed = topics_listed(namesrv)
                stop(proc)
            print(f"{binary}\t{wall:.3f}\t{cpu:.2f}\t{rss}\t{routed}\t{before}\t{load_average()}",
                  flush=True)
    shutil.rmtree(args.work, ignore_errors=True)


if __name__ == "__main__":
    main()
