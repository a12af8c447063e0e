"""Writes scripts/bench-kafka.sh's results (key=value lines) as a table between the
<!-- bench-kafka:begin --> and <!-- bench-kafka:end --> markers of the benchmarks document,
adding the section at its end the first time."""
import sys

results_path, doc_path = sys.argv[1], sys.argv[2]
r = {}
for line in open(results_path):
    if "=" in line:
        key, value = line.rstrip("\n").split("=", 1)
        r[key] = value


def number(key):
    try:
        return float(r[key])
    except (KeyError, ValueError):
        return None


def cell(key, unit=""):
    v = number(key)
    if v is None:
        return "—"
    return f"{v:,.0f}{unit}" if v >= 100 else f"{v:g}{unit}"


def ratio(metric, higher_is_better=True):
    s, a = number(f"skiff.{metric}"), number(f"apache.{metric}")
    if not s or not a:
        return "—"
    return f"{s / a:.2f}"


RATE = r.get("meta.rate", "?")
rows = [
    ("produce records/s, acks=1", "acks1.tps", ""),
    ("produce MB/s, acks=1", "acks1.mbs", ""),
    ("broker CPU per record, acks=1", "acks1.cpu_us", " µs"),
    ("produce records/s, acks=all", "acksall.tps", ""),
    ("broker CPU per record, acks=all", "acksall.cpu_us", " µs"),
    (f"produce avg latency, acks=1, {RATE} records/s", f"acks1.rate{RATE}.avg", " ms"),
    (f"produce p99 latency, acks=1, {RATE} records/s", f"acks1.rate{RATE}.p99", " ms"),
    (f"produce p99.9 latency, acks=1, {RATE} records/s", f"acks1.rate{RATE}.p999", " ms"),
    (f"broker CPU per record, acks=1, {RATE} records/s", f"acks1.rate{RATE}.cpu_us", " µs"),
    ("consume records/s", "consume.tps", ""),
    ("consume MB/s", "consume.mbs", ""),
    ("broker CPU per record consumed", "consume.cpu_us", " µs"),
]
lines = [
    "<!-- bench-kafka:begin -->",
    "<!-- Written by scripts/bench-kafka.sh; edits between these markers are overwritten. -->",
    "",
    f"Run of {r.get('meta.date', '?')}, Skiff `{r.get('meta.rev', '?')}` (release), "
    f"{int(number('meta.records') or 0):,} records of 1 KiB per measurement, 1-minute load "
    f"{r.get('meta.load', '?')} at the start. Broker on core 0, Kafka's perf tools on core 1.",
    "",
    "| measurement | Skiff | Apache Kafka 4.1.1 | Skiff / Apache |",
    "|---|---|---|---|",
]
for label, metric, unit in rows:
    lines.append(
        f"| {label} | {cell('skiff.' + metric, unit)} | {cell('apache.' + metric, unit)} "
        f"| {ratio(metric)} |"
    )
lines += ["", "<!-- bench-kafka:end -->"]
block = "\n".join(lines)

doc = open(doc_path).read()
begin, end = "<!-- bench-kafka:begin -->", "<!-- bench-kafka:end -->"
if begin in doc and end in doc:
    head, rest = doc.split(begin, 1)
    _, tail = rest.split(end, 1)
    doc = head + block + tail
else:
    doc = (
        doc.rstrip("\n")
        + "\n\n## Kafka clients: Skiff's Kafka listener and Apache Kafka\n\n"
        + "`scripts/bench-kafka.sh` runs Kafka's own `kafka-producer-perf-test` and "
        + "`kafka-consumer-perf-test` against both brokers in one run.\n\n"
        + block
        + "\n"
    )
open(doc_path, "w").write(doc)
