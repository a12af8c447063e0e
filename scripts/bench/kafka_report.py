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


def ratio(metric):
    s, a = number(f"skiff.{metric}"), number(f"apache.{metric}")
    if not s or not a:
        return None
    return s / a


def verdict(q, target):
    """`target` is (">=", x) or ("<=", x): the issue's goal for Skiff / Apache."""
    if q is None or target is None:
        return ""
    op, x = target
    met = q >= x if op == ">=" else q <= x
    return "met" if met else "missed"


RATE = r.get("meta.rate", "?")
WARMUP_S, STEADY_S = (r.get("meta.steady", "? ?").split() + ["?", "?"])[:2]
AT_LEAST, AT_MOST = ">=", "<="
rows = [
    ("produce records/s, acks=1", "acks1.tps", "", (AT_LEAST, 1)),
    ("produce MB/s, acks=1", "acks1.mbs", "", None),
    ("broker CPU per record, acks=1", "acks1.cpu_us", " µs", None),
    ("produce records/s, acks=all", "acksall.tps", "", (AT_LEAST, 1)),
    ("broker CPU per record, acks=all", "acksall.cpu_us", " µs", None),
    (f"produce avg latency, acks=1, {RATE} records/s", f"acks1.rate{RATE}.avg", " ms", None),
    (f"produce p99 latency, acks=1, {RATE} records/s (perf tool's first seconds included)",
     f"acks1.rate{RATE}.p99", " ms", None),
    (f"produce p99.9 latency, acks=1, {RATE} records/s (same)", f"acks1.rate{RATE}.p999", " ms",
     None),
    (f"broker CPU per record, acks=1, {RATE} records/s", f"acks1.rate{RATE}.cpu_us", " µs", None),
    (f"produce avg latency, acks=1, {RATE} records/s, {STEADY_S} s after a {WARMUP_S} s warm-up",
     "steady.avg", " ms", None),
    (f"produce p99 latency, same", "steady.p99", " ms", (AT_MOST, 0.5)),
    (f"produce p99.9 latency, same", "steady.p999", " ms", None),
    ("consume records/s", "consume.tps", "", (AT_LEAST, 1)),
    ("consume MB/s", "consume.mbs", "", None),
    ("broker CPU per record consumed", "consume.cpu_us", " µs", None),
    ("broker peak RSS (VmHWM)", "rss_mib", " MiB", (AT_MOST, 0.25)),
]
lines = [
    "<!-- bench-kafka:begin -->",
    "<!-- Written by scripts/bench-kafka.sh; edits between these markers are overwritten. -->",
    "",
    f"Run of {r.get('meta.date', '?')}, Skiff `{r.get('meta.rev', '?')}` (release), "
    f"{int(number('meta.records') or 0):,} records of 1 KiB per measurement, 1-minute load "
    f"{r.get('meta.load', '?')} at the start. Broker on core 0, Kafka's perf tools on core 1.",
    "",
    "| measurement | Skiff | Apache Kafka 4.1.1 | Skiff / Apache | target | |",
    "|---|---|---|---|---|---|",
]
for label, metric, unit, target in rows:
    q = ratio(metric)
    goal = f"{'≥' if target[0] == AT_LEAST else '≤'} {target[1]:g}×" if target else ""
    lines.append(
        f"| {label} | {cell('skiff.' + metric, unit)} | {cell('apache.' + metric, unit)} "
        f"| {'—' if q is None else f'{q:.2f}'} | {goal} | {verdict(q, target)} |"
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
