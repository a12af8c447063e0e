//! `skiff admin` against a `skiff standalone`: every verb Skiff's broker answers today, in table
//! and JSON form, and the failures an operator meets (unknown topic, unreachable name server,
//! names RocketMQ does not allow).
//!
//! Not here: `broker config get|set` (GET_/UPDATE_BROKER_CONFIG 26/25), `group list` (201),
//! `group delete` (207) and `topic stats --groups` (300) send codes Skiff's broker does not answer
//! yet (issue 9, item 1, another branch); they run against Apache RocketMQ 5.3.3 in
//! compat-tests/tests/skiff_admin.rs. `group reset-offset` is tested here in its direct form
//! (what the tool does when the broker does not know INVOKE_BROKER_TO_RESET_OFFSET 222 or no
//! consumer is online).

mod common;

use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::{address, Standalone};
use serde_json::Value;

fn run(args: &[&str]) -> Output {
    let child = Command::new(env!("CARGO_BIN_EXE_skiff"))
        .args(args)
        .env("RUST_LOG", "warn")
        .env_remove("NAMESRV_ADDR")
        .env_remove("SKIFF_ACCESS_KEY")
        .env_remove("SKIFF_SECRET_KEY")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run skiff");
    let pid = child.id().to_string();
    // Output is read while the command runs (a completion script fills a pipe); bounded, so a
    // hung command fails the test instead of hanging it.
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || tx.send(child.wait_with_output()));
    match rx.recv_timeout(Duration::from_secs(60)) {
        Ok(output) => output.unwrap(),
        Err(_) => {
            let _ = Command::new("kill").args(["-KILL", &pid]).status();
            panic!("skiff {args:?} did not finish within 60 s");
        }
    }
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

struct Cluster {
    _skiff: Standalone,
    namesrv: String,
}

impl Cluster {
    fn start() -> Cluster {
        let skiff = Standalone::start(&["--broker-listen", "127.0.0.1:0"]);
        let banner = skiff
            .banner(Duration::from_secs(60))
            .expect("standalone printed its addresses");
        let namesrv = address(&banner, "name server").to_string();
        Cluster {
            _skiff: skiff,
            namesrv,
        }
    }

    /// `skiff admin -n <namesrv> <args>`, which must succeed; its stdout.
    fn ok(&self, args: &[&str]) -> String {
        let out = self.admin(args);
        assert!(
            out.status.success(),
            "skiff admin {args:?} failed: {}{}",
            text(&out.stdout),
            text(&out.stderr)
        );
        text(&out.stdout)
    }

    /// [`Cluster::ok`] with `--json`, parsed.
    fn json(&self, args: &[&str]) -> Value {
        let mut all = args.to_vec();
        all.push("--json");
        let out = self.ok(&all);
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("{args:?}: {e}: {out}"))
    }

    fn admin(&self, args: &[&str]) -> Output {
        let mut all = vec!["admin", "-n", &self.namesrv];
        all.extend_from_slice(args);
        run(&all)
    }
}

/// Table rows (after the header) split into columns.
fn rows(table: &str) -> Vec<Vec<String>> {
    table
        .lines()
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .map(|l| l.split_whitespace().map(str::to_string).collect())
        .collect()
}

#[test]
fn topics_messages_and_offsets() {
    let cluster = Cluster::start();

    // cluster
    let info = cluster.json(&["cluster"]);
    let brokers = &info["clusters"][0]["brokers"];
    assert_eq!(brokers[0]["brokerName"], "broker-a", "{info}");
    assert_eq!(brokers[0]["answers"], true, "{info}");
    let table = cluster.ok(&["cluster"]);
    assert_eq!(rows(&table)[0][1], "broker-a", "{table}");

    // topic create / list / route
    let created = cluster.json(&["topic", "create", "-t", "AdminT", "--queues", "4"]);
    assert_eq!(created["readQueueNums"], 4, "{created}");
    assert_eq!(created["brokers"][0]["brokerName"], "broker-a");
    let topics = cluster.json(&["topic", "list"]);
    assert!(
        topics["topics"]
            .as_array()
            .unwrap()
            .contains(&"AdminT".into()),
        "{topics}"
    );
    assert!(cluster
        .ok(&["topic", "list"])
        .lines()
        .any(|l| l == "AdminT"));
    let route = cluster.json(&["topic", "route", "-t", "AdminT"]);
    assert_eq!(route["queueDatas"][0]["writeQueueNums"], 4, "{route}");
    let table = cluster.ok(&["topic", "route", "-t", "AdminT"]);
    assert_eq!(rows(&table)[0][2], "4", "{table}");

    // 40 messages with keys
    let bench = run(&[
        "bench",
        "produce",
        "-n",
        &cluster.namesrv,
        "-t",
        "AdminT",
        "--queues",
        "4",
        "-p",
        "1",
        "--messages",
        "40",
        "--keys",
        "--tags",
        "-s",
        "16",
    ]);
    assert!(bench.status.success(), "{}", text(&bench.stderr));

    // topic stats
    let stats = cluster.json(&["topic", "stats", "-t", "AdminT"]);
    let queues = stats["queues"].as_array().unwrap();
    assert_eq!(queues.len(), 4, "{stats}");
    let total: i64 = queues
        .iter()
        .map(|q| q["maxOffset"].as_i64().unwrap())
        .sum();
    assert_eq!(total, 40, "{stats}");
    assert_eq!(
        rows(&cluster.ok(&["topic", "stats", "-t", "AdminT"])).len(),
        4
    );

    // message print: all, then bounded by --max
    let printed = cluster.json(&["message", "print", "-t", "AdminT"]);
    let messages = printed["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 40, "{printed}");
    assert!(messages.iter().all(|m| m["topic"] == "AdminT"));
    let few = cluster.json(&["message", "print", "-t", "AdminT", "--max", "5"]);
    assert_eq!(few["messages"].as_array().unwrap().len(), 5);
    assert_eq!(few["truncated"], true);
    let table = cluster.ok(&["message", "print", "-t", "AdminT", "--max", "5"]);
    assert_eq!(rows(&table).len(), 5, "{table}");
    assert!(table.contains("stopped after 5 messages"), "{table}");

    // message query by key and by id
    let key = messages[7]["keys"].as_str().unwrap().to_string();
    let found = cluster.json(&["message", "query", "-t", "AdminT", "--key", &key]);
    let found = found["messages"].as_array().unwrap();
    assert!(!found.is_empty());
    assert!(found.iter().all(|m| m["keys"] == key.as_str()), "{found:?}");
    let id = messages[3]["msgId"].as_str().unwrap();
    let by_id = cluster.json(&["message", "query", "--id", id]);
    assert_eq!(by_id["messages"][0]["msgId"], id);
    assert_eq!(by_id["messages"][0]["body"], messages[3]["body"]);
    let uniq = messages[3]["uniqKey"].as_str().unwrap();
    let by_uniq = cluster.json(&[
        "message", "query", "-t", "AdminT", "--key", uniq, "--unique",
    ]);
    assert_eq!(by_uniq["messages"][0]["msgId"], id, "{by_uniq}");
    let missing = cluster.admin(&["message", "query", "-t", "AdminT", "--key", "no-such"]);
    assert_eq!(missing.status.code(), Some(1));
    assert!(text(&missing.stderr).contains("no message of topic AdminT has the key"));

    // group create, reset to the start, progress shows the whole backlog; reset to now: none.
    let group = cluster.json(&["group", "create", "-g", "AdminG", "--retry-max-times", "3"]);
    assert_eq!(group["retryMaxTimes"], 3, "{group}");
    let reset = cluster.json(&[
        "group",
        "reset-offset",
        "-g",
        "AdminG",
        "-t",
        "AdminT",
        "--timestamp",
        "earliest",
    ]);
    assert_eq!(reset["queues"].as_array().unwrap().len(), 4, "{reset}");
    let progress = cluster.json(&["group", "progress", "-g", "AdminG"]);
    assert_eq!(progress["diffTotal"], 40, "{progress}");
    let table = cluster.ok(&["group", "progress", "-g", "AdminG", "-t", "AdminT"]);
    assert_eq!(rows(&table).len(), 4, "{table}");
    assert!(table.contains("Diff total: 40"), "{table}");
    cluster.ok(&[
        "group",
        "reset-offset",
        "-g",
        "AdminG",
        "-t",
        "AdminT",
        "--timestamp",
        "now",
    ]);
    let progress = cluster.json(&["group", "progress", "-g", "AdminG"]);
    assert_eq!(progress["diffTotal"], 0, "{progress}");

    // topic delete: the route is gone
    cluster.json(&["topic", "delete", "-t", "AdminT"]);
    let gone = cluster.admin(&["topic", "route", "-t", "AdminT"]);
    assert_eq!(gone.status.code(), Some(1));
    assert!(
        text(&gone.stderr).contains("topic AdminT does not exist"),
        "{}",
        text(&gone.stderr)
    );
}

#[test]
fn failures_exit_non_zero_with_a_reason() {
    let cluster = Cluster::start();
    for args in [
        &["topic", "stats", "-t", "NoSuchTopic"][..],
        &["message", "print", "-t", "NoSuchTopic"],
        &["topic", "delete", "-t", "NoSuchTopic"],
    ] {
        let out = cluster.admin(args);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        let err = text(&out.stderr);
        assert!(
            err.starts_with("skiff admin: ") && err.contains("topic NoSuchTopic does not exist"),
            "{args:?}: {err}"
        );
        assert!(out.stdout.is_empty());
    }
    let out = cluster.admin(&["group", "progress", "-g", "NobodyG"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("group NobodyG has no committed offsets"));
    let out = cluster.admin(&["cluster", "-c", "NoSuchCluster"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("cluster NoSuchCluster is not known"));
    let out = cluster.admin(&["message", "query", "--id", "not-an-id"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("is not a broker message id"));

    // Hostile names never reach a broker: refused on the command line (exit 2) with the rule.
    let long = "t".repeat(128);
    for (args, why) in [
        (
            vec!["topic", "create", "-t", "../../etc/passwd"],
            "allows only letters",
        ),
        (vec!["topic", "create", "-t", long.as_str()], "at most 127"),
        (vec!["group", "create", "-g", "bad\ngroup"], "allows only"),
        (vec!["topic", "route", "-t", ""], "empty"),
        (
            vec!["broker", "config", "set", "a=1\nbrokerPermission=2"],
            "control character",
        ),
        (
            vec!["broker", "config", "set", "brokerPermission=7"],
            "invalid",
        ),
    ] {
        let out = cluster.admin(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(
            text(&out.stderr).contains(why),
            "{args:?}: {}",
            text(&out.stderr)
        );
    }

    // The topic was never created by the refused command.
    let topics = cluster.json(&["topic", "list"]);
    assert!(!topics.to_string().contains("passwd"));
}

#[test]
fn an_unreachable_name_server_is_named() {
    // A port nobody listens on: bind one and drop it.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let addr = format!("127.0.0.1:{port}");
    let started = Instant::now();
    let out = run(&["admin", "-n", &addr, "--timeout", "1s", "topic", "list"]);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(
        err.contains(&format!("name server {addr}")) && err.contains("cannot connect"),
        "{err}"
    );
    assert!(started.elapsed() < Duration::from_secs(20));
}

#[test]
fn help_teaches_every_verb_and_completions_work() {
    let help = text(&run(&["admin", "--help"]).stdout);
    for verb in [
        "skiff admin cluster",
        "topic list",
        "topic create",
        "topic route",
        "topic stats",
        "topic delete",
        "group create",
        "group progress",
        "group reset-offset",
        "message query",
        "message print",
        "broker config get",
        "broker config set",
    ] {
        assert!(help.contains(verb), "{verb:?} missing from:\n{help}");
    }
    for verb in [
        &["cluster"][..],
        &["topic", "list"],
        &["topic", "create"],
        &["topic", "delete"],
        &["topic", "route"],
        &["topic", "stats"],
        &["group", "list"],
        &["group", "create"],
        &["group", "delete"],
        &["group", "progress"],
        &["group", "reset-offset"],
        &["message", "query"],
        &["message", "print"],
        &["broker", "config", "get"],
        &["broker", "config", "set"],
    ] {
        let mut args = vec!["admin"];
        args.extend_from_slice(verb);
        args.push("--help");
        let out = run(&args);
        assert!(out.status.success(), "{verb:?}");
        let help = text(&out.stdout);
        assert!(
            help.contains("Example") && help.contains("skiff admin"),
            "{verb:?} --help has no example:\n{help}"
        );
    }
    let out = run(&["completions", "bash"]);
    assert!(out.status.success());
    let script = text(&out.stdout);
    assert!(
        script.contains("skiff") && script.contains("reset-offset"),
        "{script}"
    );
    let out = run(&["completions", "klingon"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn access_keys_sign_requests_for_a_broker_with_acl_on() {
    let dir = tempfile::tempdir().unwrap();
    let acl = dir.path().join("plain_acl.yml");
    std::fs::write(
        &acl,
        "accounts:\n  - accessKey: ops-admin1\n    secretKey: change-me-please\n    admin: true\n",
    )
    .unwrap();
    let acl_setting = format!("rocketmq.acl.plain.file={}", acl.display());
    let skiff = Standalone::start(&[
        "--broker-listen",
        "127.0.0.1:0",
        "--set",
        "aclEnable=true",
        "--set",
        &acl_setting,
    ]);
    let banner = skiff
        .banner(Duration::from_secs(60))
        .expect("standalone printed its addresses");
    let namesrv = address(&banner, "name server").to_string();
    let create = |keys: &[&str]| {
        let mut args = vec!["admin", "-n", &namesrv, "topic", "create", "-t", "AclT"];
        args.extend_from_slice(keys);
        run(&args)
    };

    let unsigned = create(&[]);
    assert_eq!(unsigned.status.code(), Some(1));
    assert!(
        text(&unsigned.stderr).contains("AclException"),
        "{}",
        text(&unsigned.stderr)
    );
    let wrong = create(&["--access-key", "ops-admin1", "--secret-key", "guess"]);
    assert_eq!(wrong.status.code(), Some(1));
    let signed = create(&[
        "--access-key",
        "ops-admin1",
        "--secret-key",
        "change-me-please",
    ]);
    assert!(signed.status.success(), "{}", text(&signed.stderr));
    // Half a key pair is a command-line error.
    let half = create(&["--access-key", "ops-admin1"]);
    assert_eq!(half.status.code(), Some(2));
}
