//! `mqadmin` itself (`org.apache.rocketmq:rocketmq-tools`, `MQAdminStartup`, from Maven Central)
//! against the target: name-server KV config (`updateKvConfig`, `deleteKvConfig`,
//! `updateOrderConf` put/get/delete), write permission (`wipeWritePerm`, `addWritePerm`, seen in
//! `topicRoute`), `haStatus`, `getBrokerConfig` / `getNamesrvConfig` (keys both targets have),
//! `updateBrokerConfig` (brokerPermission, seen in `topicRoute` and in the broker's config file),
//! `updateNamesrvConfig`,
//! `cleanUnusedTopic`, `deleteExpiredCommitLog`, `rocksDBConfigToJson`, `topicList`, `clusterList`,
//! `topicClusterList`, `topicStatus`, `brokerStatus`, `queryMsgByKey`, `updateTopicPerm`,
//! `printMsg`, `printMsgByQueue`, `queryCq`,
//! `updateSubGroup`, `getConsumerConfig` (GET_ALL_SUBSCRIPTIONGROUP_CONFIG) and `deleteSubGroup`,
//! `queryMsgById` with its consumer tracking (QUERY_TOPIC_CONSUME_BY_WHO); with a live producer
//! and push consumer, `consumerConnection`, `producerConnection`, `consumerStatus` (the broker
//! asks the consumer), `statsAll`, `resetOffsetByTime` (the consumer consumes again),
//! `brokerConsumeStats`, `producer`, `cloneGroupOffset`, a message handed to the consumer
//! directly, the consumers' own offsets asked through the broker, and the client API's system
//! topic list; `queryMsgByUniqueKey`, `cleanExpiredCQ`; topics and groups created from files
//! (`updateTopicList`, `updateSubGroupList`), `setConsumeMode`, `checkMsgSendRT`, `allocateMQ`,
//! `queryMsgByOffset`, `consumeMessage`, `consumerProgress`, `skipAccumulatedMessage`,
//! `exportMetadata`, `exportConfigs`, `exportMetrics`, `sendMsgStatus`, `deleteTopic`,
//! `getColdDataFlowCtrInfo`, `updateColdDataFlowCtrGroupConfig`,
//! `removeColdDataFlowCtrGroupConfig`, `setCommitLogReadAheadMode`, `resetMasterFlushOffset`,
//! `checkRocksdbCqWriteProgress`, `exportPopRecord`, `queryMsgTraceById` and `clusterRT`.
//!
//! On targets of their own: `updateStaticTopic` and `remappingStaticTopic`, on one broker group
//! and over two (a second broker group in the cluster, its logical queues used by a producer and
//! push consumers across a remapping); and with
//! `useServerSideResetOffset=false`, `resetOffsetByTime` pushed to a live consumer and
//! `startMonitoring`; `updateBrokerConfig` of `fileReservedTime` and `autoCreateTopicEnable`
//! in force at once (66 of mqadmin 5.3.3's 89 commands). mqadmin exits 0 even when a command
//! fails, so each command's output is checked for what Apache 5.3.3 prints, with addresses,
//! counts and ids normalised. Broker requests go over the VIP channel (port - 2).
//!
//! With ACL 2.0 authentication on, a target of its own: `createUser`, `updateUser`, `deleteUser`,
//! `getUser`, `listUser`, `copyUser`, `createAcl`, `updateAcl`, `deleteAcl`, `getAcl`, `listAcl`
//! and `copyAcl` (78 of the 89 in all; the other 11 need a controller, a broker container,
//! RocksDB metadata or a compaction log), and the refusals of requests not signed by a known,
//! enabled user.
//!
//! Each JVM runs a batch of commands (`java/tools/MqAdminBatch.java` calls `MQAdminStartup.main`
//! once per command; it does not exit). Reference run:
//!   SKIFF_COMPAT_TARGET=apache cargo test -p skiff-compat-tests --test mqadmin

use std::fs;
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use skiff_compat_tests::java::{self, java_bin};
use skiff_compat_tests::process;
use skiff_compat_tests::remoting::{self, code};
use skiff_compat_tests::settings::TargetKind;
use skiff_compat_tests::suite::unique_id;
use skiff_compat_tests::target::{AuthOptions, FlushDisk, Options, Target};

/// One batch JVM: a few seconds to start plus a few seconds per command.
const BATCH_TIMEOUT: Duration = Duration::from_secs(300);

/// The broker name the harness gives both targets.
const BROKER_NAME: &str = "broker-a";

/// Runs `commands` (each a list of words) in one mqadmin JVM; returns each command's output.
fn mqadmin(target: &Target, label: &str, commands: &[Vec<String>]) -> Result<Vec<String>> {
    let tools = java::java_dir().join("tools");
    let cp = java::classpath(&tools, "mqadmin", "5.3.3")?;
    let run_dir = target.dir().join(format!("mqadmin-{label}"));
    fs::create_dir_all(&run_dir)?;
    let batch = run_dir.join("commands.tsv");
    let text: Vec<String> = commands.iter().map(|words| words.join("\t")).collect();
    fs::write(&batch, text.join("\n") + "\n")?;
    let mut cmd = Command::new(java_bin());
    if let Some((access_key, secret_key)) = target.credentials() {
        // mqadmin signs every request with `$ROCKETMQ_HOME/conf/tools.yml`'s account.
        fs::create_dir_all(run_dir.join("conf"))?;
        fs::write(
            run_dir.join("conf/tools.yml"),
            format!("accessKey: {access_key}\nsecretKey: {secret_key}\n"),
        )?;
        cmd.arg(format!("-Drocketmq.home.dir={}", run_dir.display()));
    }
    // Its temporary files (static topic mapping dumps, Netty's self-signed certificates) stay
    // in the target's dir and go with it, not in /tmp.
    let tmp = run_dir.join("tmp");
    fs::create_dir_all(&tmp)?;
    cmd.current_dir(&run_dir)
        .args(["-Xms64m", "-Xmx256m", "-XX:TieredStopAtLevel=1"])
        .arg(format!("-Djava.io.tmpdir={}", tmp.display()))
        .arg(format!("-Duser.home={}", run_dir.display()))
        .arg(format!(
            "-Drocketmq.client.logRoot={}",
            run_dir.join("logs").display()
        ))
        .arg("-Drocketmq.client.logLevel=WARN")
        // Broker requests (and the batch producer's sends) go to the VIP port, listen port - 2,
        // as the Dashboard's do by default.
        .arg("-Dcom.rocketmq.sendMessageWithVIPChannel=true")
        .args(target.client_jvm_args())
        .arg("-cp")
        .arg(&cp)
        .arg(tools.join("MqAdminBatch.java"))
        .arg(&batch);
    let out = process::run(&format!("mqadmin-{label}"), cmd, &run_dir, BATCH_TIMEOUT)?;
    let sections = split_sections(&out);
    if sections.len() != commands.len() {
        bail!(
            "expected {} command outputs, got {}:\n{out}",
            commands.len(),
            sections.len()
        );
    }
    Ok(sections)
}

fn split_sections(out: &str) -> Vec<String> {
    let mut sections = Vec::new();
    let mut current: Option<String> = None;
    for line in out.lines() {
        if line.starts_with("##### BEGIN ") {
            current = Some(String::new());
        } else if line == "##### END" {
            sections.extend(current.take());
        } else if let Some(text) = current.as_mut() {
            text.push_str(line);
            text.push('\n');
        }
    }
    sections
}

fn words(parts: &[&str]) -> Vec<String> {
    parts.iter().map(|s| s.to_string()).collect()
}

/// `updateBrokerConfig` of one key on one broker.
fn update_broker_config(ns: &str, broker: &str, key: &str, value: &str) -> Vec<String> {
    words(&[
        "updateBrokerConfig",
        "-n",
        ns,
        "-b",
        broker,
        "-k",
        key,
        "-v",
        value,
    ])
}

/// Replaces the addresses of the target with placeholders.
fn normalise(text: &str, target: &Target) -> String {
    text.replace(&target.namesrv(), "NAMESRV")
        .replace(&target.broker(), "BROKER")
}

/// Fails unless `output` contains every one of `expected` and no exception.
fn expect(what: &str, output: &str, expected: &[&str]) -> Result<()> {
    for e in expected {
        if !output.contains(e) {
            bail!("{what}: expected {e:?} in:\n{output}");
        }
    }
    if output.contains("Exception") {
        bail!("{what}: an exception in:\n{output}");
    }
    Ok(())
}

/// `... OK, <n>` with a positive topic count (the counts differ: each target has its own system
/// topics).
fn expect_perm_ok(what: &str, output: &str, prefix: &str) -> Result<()> {
    let line = output
        .lines()
        .find(|l| l.starts_with(prefix))
        .with_context(|| format!("{what}: no line starting {prefix:?} in:\n{output}"))?;
    let count: i64 = line
        .rsplit_once(", ")
        .and_then(|(_, n)| n.trim().parse().ok())
        .with_context(|| format!("{what}: no topic count in {line:?}"))?;
    if count < 1 {
        bail!("{what}: expected a positive topic count in {line:?}");
    }
    expect(what, output, &[])
}

/// The `perm` values of a `topicRoute` output (fastjson's pretty print: `"perm":6`).
fn route_perms(output: &str) -> Vec<i32> {
    output
        .split("\"perm\":")
        .skip(1)
        .filter_map(|rest| {
            let digits: String = rest
                .trim_start()
                .chars()
                .take_while(char::is_ascii_digit)
                .collect();
            digits.parse().ok()
        })
        .collect()
}

/// One `key = value` line of `getBrokerConfig` (`%-50s=  %s`).
fn property(output: &str, key: &str) -> Option<String> {
    output.lines().find_map(|line| {
        let (k, v) = line.split_once('=')?;
        (k.trim() == key).then(|| v.trim().to_string())
    })
}

/// The message id in `sendMessage`'s table (`#Broker Name  #QID  #Send Result  #MsgId`).
fn sent_msg_id(output: &str) -> Option<String> {
    output
        .lines()
        .find(|l| l.contains("SEND_OK"))
        .and_then(|l| l.split_whitespace().last())
        .map(str::to_string)
}

/// Starts a target of its own (`label`, with `opts`), runs `scenario` against it, and fails
/// with the target's logs.
fn compare(label: &str, opts: Options, scenario: fn(&Target) -> Result<()>) {
    let started = Instant::now();
    let target = Target::start_with(label, opts).expect("start the target");
    if let Err(e) = scenario(&target) {
        panic!("{e:#}\n--- target logs ---\n{}", target.logs());
    }
    println!(
        "{label} against {:?}: PASS in {:.1?}",
        target.kind(),
        started.elapsed()
    );
}

fn default_options() -> Options {
    Options::new(FlushDisk::Async).expect("options")
}

#[test]
fn mqadmin_commands_answer_as_apache() {
    compare("mqadmin", default_options(), run);
}

/// The ACL 2.0 super user of `mqadmin_user_commands_answer_as_apache`'s target.
const SUPER_USER: &str = "skiff-root";
const SUPER_PASSWORD: &str = "skiff-root-pass";

/// ACL 2.0 users (AUTH_CREATE_/UPDATE_/DELETE_/GET_/LIST_USER) with authentication on: mqadmin
/// signs as the super user (`conf/tools.yml`), and requests signed by nobody, by an unknown or
/// disabled user or with a wrong password get the broker's NO_PERMISSION and Java's reason.
#[test]
fn mqadmin_user_commands_answer_as_apache() {
    let opts = Options {
        auth: Some(AuthOptions {
            username: SUPER_USER.into(),
            password: SUPER_PASSWORD.into(),
        }),
        ..default_options()
    };
    compare("mqadmin-users", opts, users);
}

/// The whitespace-separated words of the first line of `output` that starts with `first`.
fn row<'a>(output: &'a str, first: &str) -> Option<Vec<&'a str>> {
    output
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .find(|words| words.first() == Some(&first))
}

fn users(target: &Target) -> Result<()> {
    let ns = target.namesrv();
    let broker = target.broker();
    let user = |args: &[&str]| {
        let mut all = vec![args[0], "-n", &ns];
        all.extend_from_slice(&args[1..]);
        words(&all)
    };
    let commands = [
        user(&[
            "createUser",
            "-b",
            &broker,
            "-u",
            "alice",
            "-p",
            "alice-pass-1",
        ]),
        user(&["getUser", "-b", &broker, "-u", "alice"]),
        user(&[
            "createUser",
            "-b",
            &broker,
            "-u",
            "alice",
            "-p",
            "other-pass",
        ]),
        user(&["updateUser", "-b", &broker, "-u", "alice", "-s", "disable"]),
        user(&["getUser", "-b", &broker, "-u", "alice"]),
        user(&[
            "updateUser",
            "-c",
            "DefaultCluster",
            "-u",
            "alice",
            "-p",
            "alice-pass-2",
        ]),
        user(&["listUser", "-b", &broker]),
        user(&["listUser", "-c", "DefaultCluster", "-f", "lic"]),
        user(&["copyUser", "-f", &broker, "-t", &broker, "-u", "alice"]),
        user(&[
            "createUser",
            "-b",
            &broker,
            "-u",
            "bob",
            "-p",
            "bob-pass-1",
            "-t",
            "Super",
        ]),
        user(&["deleteUser", "-b", &broker, "-u", "alice"]),
        user(&["getUser", "-b", &broker, "-u", "alice"]),
        user(&[
            "createUser",
            "-b",
            &broker,
            "-u",
            "carol",
            "-p",
            "carol-pass-1",
        ]),
        user(&["updateUser", "-b", &broker, "-u", "carol", "-s", "disable"]),
        // 14: ACLs of a user that does not exist yet, then does.
        user(&[
            "createAcl",
            "-b",
            &broker,
            "-s",
            "User:dave",
            "-r",
            "Topic:orders",
            "-a",
            "Pub",
            "-d",
            "Allow",
        ]),
        user(&[
            "createUser",
            "-b",
            &broker,
            "-u",
            "dave",
            "-p",
            "dave-pass-1",
        ]),
        user(&[
            "createAcl",
            "-b",
            &broker,
            "-s",
            "User:dave",
            "-r",
            "Topic:orders,Group:billing*",
            "-a",
            "Pub,Sub",
            "-i",
            "10.0.0.0/8",
            "-d",
            "Allow",
        ]),
        user(&["getAcl", "-b", &broker, "-s", "User:dave"]),
        user(&[
            "updateAcl",
            "-b",
            &broker,
            "-s",
            "User:dave",
            "-r",
            "Topic:orders",
            "-a",
            "Sub",
            "-d",
            "Deny",
        ]),
        user(&["listAcl", "-b", &broker, "-s", "dave"]),
        // 20
        user(&["listAcl", "-c", "DefaultCluster", "-r", "billing"]),
        user(&[
            "createAcl",
            "-b",
            &broker,
            "-s",
            "User:dave",
            "-r",
            "Topic:x",
            "-a",
            "Pub",
            "-i",
            "10.0.0.*",
            "-d",
            "Allow",
        ]),
        user(&["copyAcl", "-f", &broker, "-t", &broker, "-s", "User:dave"]),
        user(&[
            "deleteAcl",
            "-b",
            &broker,
            "-s",
            "User:dave",
            "-r",
            "Topic:orders",
        ]),
        user(&["getAcl", "-b", &broker, "-s", "User:dave"]),
        user(&["deleteAcl", "-b", &broker, "-s", "User:dave"]),
        user(&["getAcl", "-b", &broker, "-s", "User:dave"]),
    ];
    let out = mqadmin(target, "users", &commands)?;
    let out: Vec<String> = out.iter().map(|o| normalise(o, target)).collect();
    expect("createUser", &out[0], &["create user to BROKER success."])?;
    expect(
        "getUser",
        &out[1],
        &["#UserName", "#Password", "#UserType", "#UserStatus"],
    )?;
    let alice = row(&out[1], "alice").context("getUser: no row for alice")?;
    if alice != ["alice", "alice-pass-1", "Normal", "enable"] {
        bail!("getUser: {alice:?}");
    }
    if !out[2].contains("CODE: 16  DESC: The user is existed") {
        bail!(
            "createUser of an existing user: expected NO_PERMISSION in:\n{}",
            out[2]
        );
    }
    expect(
        "updateUser -s",
        &out[3],
        &["update user to BROKER success."],
    )?;
    let alice = row(&out[4], "alice").context("getUser after update: no row for alice")?;
    if alice != ["alice", "alice-pass-1", "Normal", "disable"] {
        bail!("getUser after disable: {alice:?}");
    }
    expect(
        "updateUser -c",
        &out[5],
        &["update user to BROKER success."],
    )?;
    let listed: Vec<&str> = out[6]
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|w| !w.starts_with('#'))
        .collect();
    if listed != ["alice", SUPER_USER] {
        bail!("listUser: {listed:?} in:\n{}", out[6]);
    }
    let alice = row(&out[6], "alice").context("listUser: no row for alice")?;
    if alice != ["alice", "alice-pass-2", "Normal", "disable"] {
        bail!("listUser: {alice:?}");
    }
    expect(
        "listUser -c -f",
        &out[7],
        &["get user from BROKER success."],
    )?;
    if row(&out[7], "alice").is_none() || row(&out[7], SUPER_USER).is_some() {
        bail!("listUser -f lic: only alice expected in:\n{}", out[7]);
    }
    expect(
        "copyUser",
        &out[8],
        &["copy user of alice from BROKER to BROKER success."],
    )?;
    expect(
        "createUser -t Super",
        &out[9],
        &["create user to BROKER success."],
    )?;
    expect("deleteUser", &out[10], &["delete user to BROKER success."])?;
    if out[11].contains("#UserName") || out[11].contains("Exception") {
        bail!(
            "getUser of a deleted user: expected nothing in:\n{}",
            out[11]
        );
    }
    expect(
        "createUser carol",
        &out[12],
        &["create user to BROKER success."],
    )?;
    expect(
        "updateUser carol",
        &out[13],
        &["update user to BROKER success."],
    )?;

    acls(&out[14..])?;

    // The broker's answers to requests it does not authenticate.
    let wait = Duration::from_secs(5);
    let body = remoting::empty_heartbeat();
    let heartbeat = |credentials: Option<(&str, &str)>| -> Result<(i64, String)> {
        let fields = credentials
            .map(|(key, secret)| remoting::signed_fields(&[], &body, key, secret))
            .unwrap_or_default();
        let fields: Vec<(&str, &str)> = fields
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        let mut conn = target.connect(&broker, wait)?;
        let answer = conn.call(code::HEART_BEAT, 7, &fields, &body, wait)?;
        Ok((answer.code(), answer.remark()))
    };
    /// Who signs (user, password), and the answer's code and remark.
    type Case<'a> = (Option<(&'a str, &'a str)>, i64, &'a str);
    let cases: [Case; 5] = [
        (Some(("bob", "bob-pass-1")), 0, ""),
        (None, 16, "username cannot be null."),
        (Some(("nobody", "x")), 16, "User:nobody is not found."),
        (Some(("bob", "wrong-pass")), 16, "check signature failed."),
        (
            Some(("carol", "carol-pass-1")),
            16,
            "User:carol is disabled.",
        ),
    ];
    for (credentials, want_code, want_remark) in cases {
        let (got_code, got_remark) = heartbeat(credentials)?;
        if got_code != want_code || (want_code != 0 && got_remark != want_remark) {
            bail!(
                "heartbeat signed by {credentials:?}: expected {want_code} {want_remark:?}, got {got_code} {got_remark:?}"
            );
        }
    }
    Ok(())
}

/// The rows of `getAcl` / `listAcl` (`#Subject  #PolicyType  #Resource  #Actions  #SourceIp
/// #Decision`): subject, policy type, resource, and the rest of the line with single spaces.
fn acl_rows(output: &str) -> Vec<(String, String, String, String)> {
    output
        .lines()
        .filter(|l| l.starts_with("User:"))
        .map(|l| {
            let words: Vec<&str> = l.split_whitespace().collect();
            let rest = words.get(3..).unwrap_or_default().join(" ");
            (
                words[0].to_string(),
                words.get(1).unwrap_or(&"").to_string(),
                words.get(2).unwrap_or(&"").to_string(),
                rest,
            )
        })
        .collect()
}

/// The ACL commands' outputs, from `createAcl` for a user that does not exist on.
fn acls(out: &[String]) -> Result<()> {
    if !out[0].contains("CODE: 16  DESC: The subject of User:dave is not exist.") {
        bail!(
            "createAcl for no user: expected NO_PERMISSION in:\n{}",
            out[0]
        );
    }
    expect(
        "createUser dave",
        &out[1],
        &["create user to BROKER success."],
    )?;
    expect("createAcl", &out[2], &["create acl to BROKER success."])?;
    expect(
        "getAcl",
        &out[3],
        &[
            "#Subject",
            "#PolicyType",
            "#Resource",
            "#Actions",
            "#SourceIp",
            "#Decision",
        ],
    )?;
    let custom = |resource: &str, rest: &str| {
        (
            "User:dave".to_string(),
            "Custom".to_string(),
            resource.to_string(),
            rest.to_string(),
        )
    };
    let created = vec![
        custom("Topic:orders", "[Pub, Sub] [10.0.0.0/8] Allow"),
        custom("Group:billing*", "[Pub, Sub] [10.0.0.0/8] Allow"),
    ];
    if acl_rows(&out[3]) != created {
        bail!("getAcl: {:?} in:\n{}", acl_rows(&out[3]), out[3]);
    }
    expect("updateAcl", &out[4], &["update acl to BROKER success."])?;
    let updated = vec![
        custom("Topic:orders", "[Sub] null Deny"),
        custom("Group:billing*", "[Pub, Sub] [10.0.0.0/8] Allow"),
    ];
    if acl_rows(&out[5]) != updated {
        bail!("listAcl -s: {:?} in:\n{}", acl_rows(&out[5]), out[5]);
    }
    if acl_rows(&out[6]) != updated[1..] {
        bail!("listAcl -r: {:?} in:\n{}", acl_rows(&out[6]), out[6]);
    }
    if !out[7].contains("CODE: 16  DESC: The source ip is invalid.") {
        bail!(
            "createAcl with 10.0.0.*: expected NO_PERMISSION in:\n{}",
            out[7]
        );
    }
    expect(
        "copyAcl",
        &out[8],
        &["copy acl of User:dave from BROKER to BROKER success."],
    )?;
    expect("deleteAcl -r", &out[9], &["delete acl to BROKER success."])?;
    if acl_rows(&out[10]) != updated[1..] {
        bail!(
            "getAcl after deleteAcl -r: {:?} in:\n{}",
            acl_rows(&out[10]),
            out[10]
        );
    }
    expect("deleteAcl", &out[11], &["delete acl to BROKER success."])?;
    if !acl_rows(&out[12]).is_empty() || out[12].contains("Exception") {
        bail!("getAcl after deleteAcl: expected nothing in:\n{}", out[12]);
    }
    Ok(())
}

fn run(target: &Target) -> Result<()> {
    let ns = target.namesrv();
    let broker = target.broker();
    let id = unique_id("533");
    let topic = format!("mqadmin_{id}");
    let namespace = format!("skiff_ns_{id}");
    let group = format!("mqadmin_group_{id}");

    let first = [
        words(&["updateTopic", "-n", &ns, "-b", &broker, "-t", &topic]),
        words(&[
            "sendMessage",
            "-n",
            &ns,
            "-t",
            &topic,
            "-p",
            "hello mqadmin",
        ]),
        words(&[
            "updateKvConfig",
            "-n",
            &ns,
            "-s",
            &namespace,
            "-k",
            "k1",
            "-v",
            "v1",
        ]),
        words(&["deleteKvConfig", "-n", &ns, "-s", &namespace, "-k", "k1"]),
        words(&[
            "updateOrderConf",
            "-n",
            &ns,
            "-t",
            &topic,
            "-m",
            "put",
            "-v",
            "broker-a:4",
        ]),
        words(&["updateOrderConf", "-n", &ns, "-t", &topic, "-m", "get"]),
        words(&["updateOrderConf", "-n", &ns, "-t", &topic, "-m", "delete"]),
        words(&["updateOrderConf", "-n", &ns, "-t", &topic, "-m", "get"]),
        words(&["haStatus", "-n", &ns, "-b", &broker]),
        words(&["getBrokerConfig", "-n", &ns, "-b", &broker]),
        words(&["getNamesrvConfig", "-n", &ns]),
        words(&[
            "updateSubGroup",
            "-n",
            &ns,
            "-b",
            &broker,
            "-g",
            &group,
            "-r",
            "5",
        ]),
        words(&["getConsumerConfig", "-n", &ns, "-g", &group]),
        words(&[
            "deleteSubGroup",
            "-n",
            &ns,
            "-b",
            &broker,
            "-g",
            &group,
            "-r",
            "true",
        ]),
        words(&["getConsumerConfig", "-n", &ns, "-g", &group]),
        words(&[
            "updateNamesrvConfig",
            "-n",
            &ns,
            "-k",
            "scanNotActiveBrokerInterval",
            "-v",
            "6000",
        ]),
        words(&["getNamesrvConfig", "-n", &ns]),
        words(&[
            "updateNamesrvConfig",
            "-n",
            &ns,
            "-k",
            "scanNotActiveBrokerInterval",
            "-v",
            "5000",
        ]),
    ];
    let out = mqadmin(target, "first", &first)?;
    let out: Vec<String> = out.iter().map(|o| normalise(o, target)).collect();
    expect("updateTopic", &out[0], &["create topic to BROKER success."])?;
    expect("sendMessage", &out[1], &["SEND_OK"])?;
    let msg_id = sent_msg_id(&out[1]).context("no message id in sendMessage's output")?;
    expect(
        "updateKvConfig",
        &out[2],
        &["create or update kv config to namespace success."],
    )?;
    expect(
        "deleteKvConfig",
        &out[3],
        &["delete kv config from namespace success."],
    )?;
    expect(
        "updateOrderConf put",
        &out[4],
        &[&format!(
            "update orderConf success. topic=[{topic}], orderConf=[broker-a:4]"
        )],
    )?;
    expect(
        "updateOrderConf get",
        &out[5],
        &[&format!(
            "get orderConf success. topic=[{topic}], orderConf=[broker-a:4]"
        )],
    )?;
    expect(
        "updateOrderConf delete",
        &out[6],
        &[&format!("delete orderConf success. topic=[{topic}]")],
    )?;
    // A deleted key: the name server's QUERY_NOT_FOUND (22) and Java's remark.
    for e in [
        "CODE: 22".to_string(),
        format!("No config item, Namespace: ORDER_TOPIC_CONFIG Key: {topic}"),
    ] {
        if !out[7].contains(&e) {
            bail!(
                "updateOrderConf get after delete: expected {e:?} in:\n{}",
                out[7]
            );
        }
    }
    expect(
        "haStatus",
        &out[8],
        &[
            "#MasterAddr\tBROKER",
            "#MasterCommitLogMaxOffset\t",
            "#SlaveNum\t0",
            "#InSyncSlaveNum\t0",
        ],
    )?;

    let config = &out[9];
    expect("getBrokerConfig", config, &[])?;
    let port = broker.rsplit_once(':').map_or("", |(_, p)| p);
    for (key, value) in [
        ("brokerClusterName", "DefaultCluster"),
        ("brokerName", BROKER_NAME),
        ("brokerId", "0"),
        ("listenPort", port),
        ("brokerRole", "ASYNC_MASTER"),
        ("flushDiskType", "ASYNC_FLUSH"),
        ("brokerPermission", "6"),
        ("autoCreateTopicEnable", "true"),
    ] {
        let found = property(config, key);
        if found.as_deref() != Some(value) {
            bail!("getBrokerConfig: expected {key}={value}, got {found:?} in:\n{config}");
        }
    }

    let config = &out[10];
    expect(
        "getNamesrvConfig",
        config,
        &["============NAMESRV============"],
    )?;
    let port = ns.rsplit_once(':').map_or("", |(_, p)| p);
    for (key, value) in [
        ("listenPort", port),
        ("scanNotActiveBrokerInterval", "5000"),
    ] {
        let found = property(config, key);
        if found.as_deref() != Some(value) {
            bail!("getNamesrvConfig: expected {key}={value}, got {found:?} in:\n{config}");
        }
    }

    expect(
        "updateSubGroup",
        &out[11],
        &["create subscription group to BROKER success."],
    )?;
    let config = &out[12];
    expect(
        "getConsumerConfig",
        config,
        &["=============================DefaultCluster:broker-a============================="],
    )?;
    for (key, value) in [
        ("groupName", group.as_str()),
        ("consumeEnable", "true"),
        ("retryQueueNums", "1"),
        ("retryMaxTimes", "5"),
    ] {
        let found = property(config, key);
        if found.as_deref() != Some(value) {
            bail!("getConsumerConfig: expected {key}={value}, got {found:?} in:\n{config}");
        }
    }

    expect(
        "deleteSubGroup",
        &out[13],
        &[&format!(
            "delete subscription group [{group}] from broker [BROKER] success."
        )],
    )?;
    if !out[14].trim().is_empty() {
        bail!("getConsumerConfig of a deleted group printed:\n{}", out[14]);
    }
    // UPDATE_NAMESRV_CONFIG, seen in GET_NAMESRV_CONFIG, then set back.
    for i in [15, 17] {
        expect(
            "updateNamesrvConfig",
            &out[i],
            &[
                "update name server config success!",
                "scanNotActiveBrokerInterval : ",
            ],
        )?;
    }
    let found = property(&out[16], "scanNotActiveBrokerInterval");
    if found.as_deref() != Some("6000") {
        bail!(
            "getNamesrvConfig after updateNamesrvConfig: expected 6000, got {found:?} in:\n{}",
            out[16]
        );
    }

    // A second JVM: the route changes of updateTopic reach the name server asynchronously, and a
    // registration that lands after the wipe would undo it.
    let second = [
        words(&["wipeWritePerm", "-n", &ns, "-b", BROKER_NAME]),
        words(&["topicRoute", "-n", &ns, "-t", &topic]),
        words(&["addWritePerm", "-n", &ns, "-b", BROKER_NAME]),
        words(&["topicRoute", "-n", &ns, "-t", &topic]),
        words(&[
            "queryMsgById",
            "-n",
            &ns,
            "-t",
            &topic,
            "-i",
            &msg_id,
            "-f",
            "UTF-8",
        ]),
        // UPDATE_BROKER_CONFIG: a read-only broker announces read-only routes, and back.
        update_broker_config(&ns, &broker, "brokerPermission", "4"),
        words(&["topicRoute", "-n", &ns, "-t", &topic]),
        update_broker_config(&ns, &broker, "brokerPermission", "6"),
        words(&["topicRoute", "-n", &ns, "-t", &topic]),
        // Maintenance: neither deletes anything here (every topic is in use, nothing expired).
        words(&["cleanUnusedTopic", "-n", &ns, "-b", &broker]),
        words(&["deleteExpiredCommitLog", "-n", &ns, "-b", &broker]),
        words(&["rocksDBConfigToJson", "-b", &broker, "-t", "topics"]),
        // The message by its unique key (QUERY_MESSAGE with _UNIQUE_KEY_QUERY).
        words(&[
            "queryMsgByUniqueKey",
            "-n",
            &ns,
            "-t",
            &topic,
            "-i",
            &msg_id,
        ]),
        // CLEAN_EXPIRED_CONSUMEQUEUE: nothing has expired, every queue stays.
        words(&["cleanExpiredCQ", "-n", &ns, "-b", &broker]),
    ];
    let out = mqadmin(target, "second", &second)?;
    let out: Vec<String> = out.iter().map(|o| normalise(o, target)).collect();
    expect_perm_ok(
        "wipeWritePerm",
        &out[0],
        "wipe write perm of broker[broker-a] in name server[NAMESRV] OK, ",
    )?;
    expect("topicRoute after wipe", &out[1], &[])?;
    if route_perms(&out[1]) != [4] {
        bail!(
            "topicRoute after wipe: expected perm 4 (read only) in:\n{}",
            out[1]
        );
    }
    expect_perm_ok(
        "addWritePerm",
        &out[2],
        "add write perm of broker[broker-a] in name server[NAMESRV] OK, ",
    )?;
    expect("topicRoute after add", &out[3], &[])?;
    if route_perms(&out[3]) != [6] {
        bail!(
            "topicRoute after add: expected perm 6 (read-write) in:\n{}",
            out[3]
        );
    }
    expect(
        "queryMsgById",
        &out[4],
        &[
            "Message Body:        hello mqadmin",
            &topic,
            "WARN: No Consumer",
        ],
    )?;
    for (i, perm) in [(5, 4), (7, 6)] {
        expect(
            "updateBrokerConfig brokerPermission",
            &out[i],
            &["update broker config success, BROKER"],
        )?;
        expect("topicRoute after updateBrokerConfig", &out[i + 1], &[])?;
        if route_perms(&out[i + 1]) != [perm] {
            bail!(
                "topicRoute after brokerPermission={perm}: expected perm {perm} in:\n{}",
                out[i + 1]
            );
        }
    }
    // Both write the settings into the config file the broker started from (Java's
    // `Configuration.persist`), so that they hold after a restart; the harness's file had no
    // brokerPermission.
    let conf = match target.kind() {
        TargetKind::Apache => "broker.conf",
        TargetKind::Skiff => "broker.toml",
    };
    let text = fs::read_to_string(target.dir().join(conf))?;
    let written = text
        .lines()
        .filter_map(|l| l.split_once('='))
        .any(|(k, v)| k.trim() == "brokerPermission" && v.trim() == "6");
    if !written {
        bail!("updateBrokerConfig: brokerPermission=6 is not in {conf}:\n{text}");
    }
    expect("cleanUnusedTopic", &out[9], &["success"])?;
    expect("deleteExpiredCommitLog", &out[10], &["success"])?;
    // EXPORT_ROCKSDB_CONFIG_TO_JSON: neither broker keeps its configs in RocksDB.
    expect("rocksDBConfigToJson", &out[11], &["broker export done."])?;
    if out[11].contains("export error") {
        bail!("rocksDBConfigToJson: {}", out[11]);
    }
    expect(
        "queryMsgByUniqueKey",
        &out[12],
        &["Topic:", &topic, "Queue Offset:", "Message Body Path:"],
    )?;
    expect("cleanExpiredCQ", &out[13], &["success"])?;
    // mqadmin always writes the body to this fixed path too; remove the file it made.
    let _ = fs::remove_file(format!("/tmp/rocketmq/msgbodys/{msg_id}"));
    live_clients(target, &id)?;
    listings(target, &id)?;
    batch_changes(target, &id)?;
    storage_tuning(target, &id)
}

/// A sixth JVM: the cold-read flow control's tables (UPDATE_/REMOVE_COLD_DATA_FLOW_CTR_CONFIG,
/// GET_COLD_DATA_FLOW_CTR_INFO), CommitLog readahead (SET_COMMITLOG_READ_MODE), a master's
/// answer to RESET_MASTER_FLUSH_OFFSET, the RocksDB ConsumeQueue check of a broker without one
/// (CHECK_ROCKSDB_CQ_WRITE_PROGRESS), POP records moved out of a KV store it does not have
/// (POP_ROLLBACK, `exportPopRecord`), a traced send looked up in the trace topic
/// (`queryMsgTraceById`), and `clusterRT`'s send round trips (it never returns: run in the
/// background for a few seconds).
fn storage_tuning(target: &Target, id: &str) -> Result<()> {
    let ns = target.namesrv();
    let broker = target.broker();
    let group = format!("mqadmin_cold_{id}");
    let trace_group = format!("mqadmin_traced_{id}");
    let topic = format!("mqadmin_traced_{id}");
    let commands = [
        words(&["getColdDataFlowCtrInfo", "-n", &ns, "-b", &broker]),
        words(&[
            "updateColdDataFlowCtrGroupConfig",
            "-n",
            &ns,
            "-b",
            &broker,
            "-g",
            &group,
            "-v",
            "2048",
        ]),
        words(&["getColdDataFlowCtrInfo", "-n", &ns, "-c", "DefaultCluster"]),
        words(&[
            "removeColdDataFlowCtrGroupConfig",
            "-n",
            &ns,
            "-b",
            &broker,
            "-g",
            &group,
        ]),
        words(&["getColdDataFlowCtrInfo", "-n", &ns, "-b", &broker]),
        words(&[
            "setCommitLogReadAheadMode",
            "-n",
            &ns,
            "-b",
            &broker,
            "-m",
            "1",
        ]),
        words(&[
            "setCommitLogReadAheadMode",
            "-n",
            &ns,
            "-c",
            "DefaultCluster",
            "-m",
            "0",
        ]),
        words(&[
            "setCommitLogReadAheadMode",
            "-n",
            &ns,
            "-b",
            &broker,
            "-m",
            "7",
        ]),
        words(&[
            "resetMasterFlushOffset",
            "-n",
            &ns,
            "-b",
            &broker,
            "-o",
            "0",
        ]),
        words(&[
            "checkRocksdbCqWriteProgress",
            "-n",
            &ns,
            "-c",
            "DefaultCluster",
        ]),
        words(&["exportPopRecord", "-n", &ns, "-c", "DefaultCluster"]),
        words(&["@traced", &ns, &trace_group, &topic]),
        words(&[
            "@background",
            "8000",
            "clusterRT",
            "-n",
            &ns,
            "-c",
            "DefaultCluster",
            "-a",
            "5",
            "-s",
            "16",
            "-i",
            "600",
        ]),
    ];
    let out = mqadmin(target, "storage", &commands)?;
    let out: Vec<String> = out.iter().map(|o| normalise(o, target)).collect();
    for (i, what) in [
        (0, "getColdDataFlowCtrInfo"),
        (4, "getColdDataFlowCtrInfo after remove"),
    ] {
        expect(
            what,
            &out[i],
            &[
                "============BROKER============",
                "\"cgColdReadThreshold\":3145728",
                "\"globalColdReadThreshold\":104857600",
                "\"globalAcc\":0",
                "\"runtimeTable\":{}",
            ],
        )?;
        if out[i].contains(&group) {
            bail!("{what}: {group} still configured:\n{}", out[i]);
        }
    }
    expect(
        "updateColdDataFlowCtrGroupConfig",
        &out[1],
        &["updateColdDataFlowCtrGroupConfig success, BROKER"],
    )?;
    expect(
        "getColdDataFlowCtrInfo -c",
        &out[2],
        &[
            "============Master: BROKER============",
            &format!("\"{group}\":2048"),
        ],
    )?;
    expect(
        "removeColdDataFlowCtrGroupConfig",
        &out[3],
        &["remove broker cold read threshold success, BROKER"],
    )?;
    expect(
        "setCommitLogReadAheadMode -b",
        &out[5],
        &["commitLog set readAhead mode rstStrset commitlog readahead mode success, mode: 1"],
    )?;
    expect(
        "setCommitLogReadAheadMode -c",
        &out[6],
        &["commitLog set readAhead mode rstStrset commitlog readahead mode success, mode: 0"],
    )?;
    expect(
        "setCommitLogReadAheadMode -m 7",
        &out[7],
        &["set the read mode error; 0 is default, 1 random read"],
    )?;
    expect(
        "resetMasterFlushOffset",
        &out[8],
        &["reset master flush offset to 0 success"],
    )?;
    expect(
        "checkRocksdbCqWriteProgress",
        &out[9],
        &["broker-a check doing, please wait and get the result from log..."],
    )?;
    expect(
        "exportPopRecord",
        &out[10],
        &["Export broker records, brokerName=broker-a, brokerAddr=BROKER"],
    )?;
    // `#Type #ProducerGroup #ClientHost #SendTime #CostTimes #Status`, then the send.
    expect(
        "queryMsgTraceById",
        &out[11],
        &["traced SEND_OK", "#ProducerGroup", "#Status"],
    )?;
    let pub_row: Vec<&str> = out[11]
        .lines()
        .find(|l| l.starts_with("Pub "))
        .with_context(|| format!("queryMsgTraceById: no Pub row in:\n{}", out[11]))?
        .split_whitespace()
        .collect();
    if pub_row.get(1) != Some(&trace_group.as_str()) || pub_row.last() != Some(&"success") {
        bail!("queryMsgTraceById: expected the send of {trace_group}, successful: {pub_row:?}");
    }
    // `#Cluster Name  #Broker Name  #RT  #successCount  #failCount`, then one row per broker.
    expect("clusterRT", &out[12], &["#Cluster Name", "#successCount"])?;
    let row: Vec<&str> = out[12]
        .lines()
        .find(|l| l.starts_with("DefaultCluster"))
        .with_context(|| format!("clusterRT: no row for the cluster in:\n{}", out[12]))?
        .split_whitespace()
        .collect();
    if row.len() != 5 || row[1] != BROKER_NAME || row[3] != "5" || row[4] != "0" {
        bail!("clusterRT: expected 5 sends to {BROKER_NAME} without failure: {row:?}");
    }
    Ok(())
}

/// A fifth JVM: topics and groups created from files in one request each
/// (UPDATE_AND_CREATE_TOPIC_LIST, UPDATE_AND_CREATE_SUBSCRIPTIONGROUP_LIST), a group's consume
/// mode (SET_MESSAGE_REQUEST_MODE), the client-side commands that only send, pull and route
/// (`checkMsgSendRT`, `allocateMQ`, `queryMsgByOffset`, `consumeMessage`, `sendMsgStatus`), a
/// group's skip to the end (`skipAccumulatedMessage`), the exports, and a topic deleted from the
/// cluster (`deleteTopic`, then no route).
fn batch_changes(target: &Target, id: &str) -> Result<()> {
    let ns = target.namesrv();
    let broker = target.broker();
    let topic = format!("mqadmin_batch_{id}");
    let listed = [format!("mqadmin_tl1_{id}"), format!("mqadmin_tl2_{id}")];
    let groups = [format!("mqadmin_gl1_{id}"), format!("mqadmin_gl2_{id}")];
    let dir = target.dir().join("mqadmin-batch-files");
    fs::create_dir_all(&dir)?;
    // What the commands read: lists of Java's TopicConfig and SubscriptionGroupConfig as JSON.
    let topics_file = dir.join("topics.json");
    fs::write(
        &topics_file,
        format!(
            r#"[{{"topicName":"{}","readQueueNums":3,"writeQueueNums":3,"perm":6}},
               {{"topicName":"{}","readQueueNums":2,"writeQueueNums":2,"perm":6}}]"#,
            listed[0], listed[1]
        ),
    )?;
    let groups_file = dir.join("groups.json");
    fs::write(
        &groups_file,
        format!(
            r#"[{{"groupName":"{}","retryMaxTimes":7}},{{"groupName":"{}"}}]"#,
            groups[0], groups[1]
        ),
    )?;
    let export_dir = dir.join("export");
    let (topics_path, groups_path, export_path) = (
        topics_file.display().to_string(),
        groups_file.display().to_string(),
        export_dir.display().to_string(),
    );
    let batch = [
        words(&[
            "updateTopic",
            "-n",
            &ns,
            "-b",
            &broker,
            "-t",
            &topic,
            "-r",
            "1",
            "-w",
            "1",
        ]),
        words(&["sendMessage", "-n", &ns, "-t", &topic, "-p", "batched"]),
        words(&[
            "updateTopicList",
            "-n",
            &ns,
            "-b",
            &broker,
            "-f",
            &topics_path,
        ]),
        words(&["topicRoute", "-n", &ns, "-t", &listed[0]]),
        words(&["topicRoute", "-n", &ns, "-t", &listed[1]]),
        words(&[
            "updateSubGroupList",
            "-n",
            &ns,
            "-b",
            &broker,
            "-f",
            &groups_path,
        ]),
        words(&["getConsumerConfig", "-n", &ns, "-g", &groups[0]]),
        words(&[
            "setConsumeMode",
            "-n",
            &ns,
            "-b",
            &broker,
            "-t",
            &topic,
            "-g",
            &groups[1],
            "-m",
            "POP",
            "-q",
            "1",
        ]),
        words(&[
            "checkMsgSendRT",
            "-n",
            &ns,
            "-t",
            &topic,
            "-a",
            "3",
            "-s",
            "64",
        ]),
        words(&[
            "allocateMQ",
            "-n",
            &ns,
            "-t",
            &listed[0],
            "-i",
            "10.0.0.1,10.0.0.2",
        ]),
        words(&[
            "queryMsgByOffset",
            "-n",
            &ns,
            "-t",
            &topic,
            "-b",
            BROKER_NAME,
            "-i",
            "0",
            "-o",
            "0",
        ]),
        words(&[
            "consumeMessage",
            "-n",
            &ns,
            "-t",
            &topic,
            "-b",
            BROKER_NAME,
            "-i",
            "0",
            "-o",
            "0",
            "-c",
            "1",
        ]),
        words(&[
            "skipAccumulatedMessage",
            "-n",
            &ns,
            "-g",
            &groups[0],
            "-t",
            &topic,
        ]),
        words(&[
            "exportMetadata",
            "-n",
            &ns,
            "-c",
            "DefaultCluster",
            "-f",
            &export_path,
        ]),
        words(&[
            "exportConfigs",
            "-n",
            &ns,
            "-c",
            "DefaultCluster",
            "-f",
            &export_path,
        ]),
        words(&[
            "exportMetrics",
            "-n",
            &ns,
            "-c",
            "DefaultCluster",
            "-f",
            &export_path,
        ]),
        // Sends to the broker-name topic (a system topic both brokers create writable).
        words(&[
            "sendMsgStatus",
            "-n",
            &ns,
            "-b",
            BROKER_NAME,
            "-s",
            "64",
            "-c",
            "2",
        ]),
        words(&[
            "deleteTopic",
            "-n",
            &ns,
            "-c",
            "DefaultCluster",
            "-t",
            &listed[1],
        ]),
        words(&["topicRoute", "-n", &ns, "-t", &listed[1]]),
    ];
    let out = mqadmin(target, "batch", &batch)?;
    let out: Vec<String> = out.iter().map(|o| normalise(o, target)).collect();
    expect("updateTopic", &out[0], &["create topic to BROKER success."])?;
    expect("sendMessage", &out[1], &["SEND_OK"])?;
    expect(
        "updateTopicList",
        &out[2],
        &["submit batch of topic config to BROKER success"],
    )?;
    for (i, queues) in [(3, 3), (4, 2)] {
        expect("topicRoute of a listed topic", &out[i], &[])?;
        if !out[i].contains(&format!("\"writeQueueNums\":{queues}")) {
            bail!("topicRoute: expected {queues} write queues in:\n{}", out[i]);
        }
    }
    expect(
        "updateSubGroupList",
        &out[5],
        &["submit batch of group config to BROKER success"],
    )?;
    for (key, value) in [("groupName", groups[0].as_str()), ("retryMaxTimes", "7")] {
        let found = property(&out[6], key);
        if found.as_deref() != Some(value) {
            bail!("getConsumerConfig of a listed group: expected {key}={value}, got {found:?} in:\n{}", out[6]);
        }
    }
    expect(
        "setConsumeMode",
        &out[7],
        &[
            "set consume mode to BROKER success.",
            "consume mode[POP] popShareQueueNum[1]",
        ],
    )?;
    expect(
        "checkMsgSendRT",
        &out[8],
        &["#Broker Name", "#RT", "Avg RT:"],
    )?;
    if out[8].matches("true").count() < 3 {
        bail!(
            "checkMsgSendRT: expected 3 successful sends in:\n{}",
            out[8]
        );
    }
    // The allocation of the topic's 3 queues to the two addresses, computed by mqadmin.
    expect(
        "allocateMQ",
        &out[9],
        &["\"result\"", "10.0.0.1", "10.0.0.2"],
    )?;
    expect(
        "queryMsgByOffset",
        &out[10],
        &["Topic:", &topic, "Queue ID:", "Message Body Path:"],
    )?;
    expect("consumeMessage", &out[11], &["Consume ok", "BODY: batched"])?;
    expect(
        "skipAccumulatedMessage",
        &out[12],
        &["#brokerName", "#queueId", "#offset"],
    )?;
    let skipped = out[12]
        .lines()
        .find(|l| l.starts_with(BROKER_NAME))
        .with_context(|| format!("skipAccumulatedMessage: no row in:\n{}", out[12]))?;
    // The queue's end: sendMessage's message and checkMsgSendRT's 3.
    if skipped.split_whitespace().collect::<Vec<_>>() != [BROKER_NAME, "0", "4"] {
        bail!(
            "skipAccumulatedMessage: expected queue 0 set to its end (4) in:\n{}",
            out[12]
        );
    }
    expect("exportMetadata", &out[13], &["export ", "success"])?;
    let metadata = fs::read_to_string(export_dir.join("metadata.json"))
        .context("exportMetadata wrote no metadata.json")?;
    for name in [&topic, &listed[0], &groups[0]] {
        if !metadata.contains(name.as_str()) {
            bail!("exportMetadata: {name} missing from metadata.json:\n{metadata}");
        }
    }
    expect("exportConfigs", &out[14], &["export ", "success"])?;
    let configs = fs::read_to_string(export_dir.join("configs.json"))
        .context("exportConfigs wrote no configs.json")?;
    for part in [
        "\"brokerName\":\"broker-a\"",
        "\"masterBrokerSize\":1",
        "flushDiskType",
    ] {
        if !configs.contains(part) {
            bail!("exportConfigs: {part} missing from configs.json:\n{configs}");
        }
    }
    expect("exportMetrics", &out[15], &["export ", "success"])?;
    let metrics = fs::read_to_string(export_dir.join("metrics.json"))
        .context("exportMetrics wrote no metrics.json")?;
    for part in ["\"broker-a\"", "\"runtimeQuota\"", "\"totalTps\""] {
        if !metrics.contains(part) {
            bail!("exportMetrics: {part} missing from metrics.json:\n{metrics}");
        }
    }
    expect("sendMsgStatus", &out[16], &["rt=", "SEND_OK"])?;
    if out[16].matches("sendStatus=SEND_OK").count() != 2 {
        bail!("sendMsgStatus: expected 2 sends in:\n{}", out[16]);
    }
    expect(
        "deleteTopic",
        &out[17],
        &[
            &format!(
                "delete topic [{}] from cluster [DefaultCluster] success.",
                listed[1]
            ),
            &format!("delete topic [{}] from NameServer success.", listed[1]),
        ],
    )?;
    if !out[18].contains("CODE: 17") {
        bail!(
            "topicRoute of a deleted topic: expected TOPIC_NOT_EXIST (17) in:\n{}",
            out[18]
        );
    }
    Ok(())
}

/// A fourth JVM: the listing and lookup commands over a topic of its own (one queue, so offsets
/// are known), and a topic's permission changed in the broker.
fn listings(target: &Target, id: &str) -> Result<()> {
    let ns = target.namesrv();
    let broker = target.broker();
    let topic = format!("mqadmin_list_{id}");
    let key = format!("key_{id}");
    let batch = [
        words(&[
            "updateTopic",
            "-n",
            &ns,
            "-b",
            &broker,
            "-t",
            &topic,
            "-r",
            "1",
            "-w",
            "1",
        ]),
        words(&[
            "sendMessage",
            "-n",
            &ns,
            "-t",
            &topic,
            "-p",
            "listed",
            "-k",
            &key,
        ]),
        // Both brokers build their message index a moment after the send.
        words(&["@sleep", "3000"]),
        words(&["topicList", "-n", &ns]),
        words(&["clusterList", "-n", &ns]),
        words(&["topicClusterList", "-n", &ns, "-t", &topic]),
        words(&["topicStatus", "-n", &ns, "-t", &topic]),
        words(&["brokerStatus", "-n", &ns, "-b", &broker]),
        words(&["queryMsgByKey", "-n", &ns, "-t", &topic, "-k", &key]),
        words(&[
            "updateTopicPerm",
            "-n",
            &ns,
            "-b",
            &broker,
            "-t",
            &topic,
            "-p",
            "4",
        ]),
        words(&["topicRoute", "-n", &ns, "-t", &topic]),
        // A read-only topic still reads.
        words(&["printMsg", "-n", &ns, "-t", &topic]),
        words(&[
            "printMsgByQueue",
            "-n",
            &ns,
            "-t",
            &topic,
            "-a",
            BROKER_NAME,
            "-i",
            "0",
            "-p",
            "true",
            "-d",
            "true",
        ]),
        // QUERY_CONSUME_QUEUE: the broker from the route, then by address with a group that is
        // not online, then an index past the queue's end (a success without a body, on which
        // mqadmin 5.3.3 fails with a NullPointerException).
        words(&["queryCq", "-n", &ns, "-t", &topic, "-q", "0", "-i", "0"]),
        words(&[
            "queryCq",
            "-n",
            &ns,
            "-t",
            &topic,
            "-q",
            "0",
            "-i",
            "0",
            "-c",
            "5",
            "-b",
            &broker,
            "-g",
            &format!("mqadmin_cq_{id}"),
        ]),
        words(&["queryCq", "-n", &ns, "-t", &topic, "-q", "0", "-i", "7"]),
    ];
    let out = mqadmin(target, "listings", &batch)?;
    let out: Vec<String> = out.iter().map(|o| normalise(o, target)).collect();
    expect("updateTopic", &out[0], &["create topic to BROKER success."])?;
    expect("sendMessage", &out[1], &["SEND_OK"])?;
    if !out[3].lines().any(|l| l.trim() == topic) {
        bail!("topicList: no line {topic} in:\n{}", out[3]);
    }
    expect(
        "clusterList",
        &out[4],
        &[
            "#Cluster Name",
            "DefaultCluster",
            BROKER_NAME,
            "BROKER",
            "V5_3_3",
        ],
    )?;
    expect("topicClusterList", &out[5], &["DefaultCluster"])?;
    // `#Broker Name #QID #Min Offset #Max Offset #Last Updated`: queue 0 holds the one message.
    expect(
        "topicStatus",
        &out[6],
        &["#Broker Name", "#QID", "#Min Offset", "#Max Offset"],
    )?;
    let row = out[6]
        .lines()
        .find(|l| l.starts_with(BROKER_NAME))
        .with_context(|| format!("topicStatus: no row in:\n{}", out[6]))?;
    let cols: Vec<&str> = row.split_whitespace().collect();
    if cols.get(1..4) != Some(&["0", "0", "1"][..]) {
        bail!("topicStatus: expected queue 0 from 0 to 1 in:\n{}", out[6]);
    }
    expect(
        "brokerStatus",
        &out[7],
        &["brokerVersionDesc", "V5_3_3", "msgPutTotalTodayNow"],
    )?;
    expect(
        "queryMsgByKey",
        &out[8],
        &["#Message ID", "#QID", "#Offset"],
    )?;
    if out[8]
        .lines()
        .filter(|l| l.split_whitespace().count() == 3 && !l.starts_with('#'))
        .count()
        != 1
    {
        bail!("queryMsgByKey: expected one message in:\n{}", out[8]);
    }
    expect(
        "updateTopicPerm",
        &out[9],
        &["update topic perm from 6 to 4 in BROKER success."],
    )?;
    if route_perms(&out[10]) != [4] {
        bail!(
            "topicRoute after updateTopicPerm: expected perm 4 in:\n{}",
            out[10]
        );
    }
    expect("printMsg", &out[11], &["MSGID: ", "BODY: listed"])?;
    expect("printMsgByQueue", &out[12], &["MSGID: ", "BODY: listed"])?;
    // `idx: 0` then `ConsumeQueueData{physicOffset=.., physicSize=.., tagsCode=0, ..}`: the one
    // message, no tag; sizes and offsets differ between the brokers' stores.
    let entry = [
        "Queue data: \nmax: 1, min: 0",
        "idx: 0\nConsumeQueueData{physicOffset=",
        ", tagsCode=0, extendDataJson='null', bitMap='null', eval=false, msg='null'}",
    ];
    expect("queryCq", &out[13], &entry)?;
    if out[13].matches("idx: ").count() != 1 {
        bail!("queryCq: expected one entry in:\n{}", out[13]);
    }
    let offline = format!("Filter data: \nmqadmin_cq_{id}@{topic} is not online!");
    expect(
        "queryCq -g",
        &out[14],
        &[offline.as_str(), entry[0], entry[1]],
    )?;
    if !out[15].contains("java.lang.NullPointerException") || out[15].contains("Queue data") {
        bail!(
            "queryCq past the end: expected mqadmin's NullPointerException in:\n{}",
            out[15]
        );
    }
    Ok(())
}

/// A third JVM with a producer and a push consumer of its own: their connections
/// (GET_CONSUMER_CONNECTION_LIST, GET_PRODUCER_CONNECTION_LIST), the consumer's running info (the
/// broker asks the client: GET_CONSUMER_RUNNING_INFO), the traffic statistics
/// (VIEW_BROKER_STATS_DATA, sampled every 10 s; hence the sleep), the system topic list and an
/// offset reset the consumer follows (INVOKE_BROKER_TO_RESET_OFFSET), the broker's consume stats
/// (GET_BROKER_CONSUME_STATS), its producer table (GET_ALL_PRODUCER_INFO) and a message handed to
/// the consumer by the broker (CONSUME_MESSAGE_DIRECTLY, as `queryMsgById -d` asks), a group's
/// offsets cloned (CLONE_GROUP_OFFSET) and the consumer's own offsets asked through the broker
/// (INVOKE_BROKER_TO_GET_CONSUMER_STATUS), and the group's progress (`consumerProgress`).
fn live_clients(target: &Target, id: &str) -> Result<()> {
    let ns = target.namesrv();
    let topic = format!("mqadmin_live_{id}");
    let producer_group = format!("mqadmin_pg_{id}");
    let consumer_group = format!("mqadmin_cg_{id}");
    let clone_group = format!("mqadmin_clone_{id}");
    let batch = [
        words(&[
            "updateTopic",
            "-n",
            &ns,
            "-b",
            &target.broker(),
            "-t",
            &topic,
        ]),
        words(&["@producer", &ns, &producer_group, &topic, "5"]),
        words(&["@consumer", &ns, &consumer_group, &topic, "5"]),
        words(&["@sleep", "12000"]),
        words(&["consumerConnection", "-n", &ns, "-g", &consumer_group]),
        words(&[
            "producerConnection",
            "-n",
            &ns,
            "-g",
            &producer_group,
            "-t",
            &topic,
        ]),
        words(&["consumerStatus", "-n", &ns, "-g", &consumer_group]),
        words(&["statsAll", "-n", &ns, "-t", &topic]),
        words(&[
            "updateSubGroup",
            "-n",
            &ns,
            "-b",
            &target.broker(),
            "-g",
            &clone_group,
        ]),
        words(&[
            "cloneGroupOffset",
            "-n",
            &ns,
            "-s",
            &consumer_group,
            "-d",
            &clone_group,
            "-t",
            &topic,
            "-o",
            "true",
        ]),
        // Once per JVM: the command keeps its admin client, shut down after its first run.
        words(&["brokerConsumeStats", "-n", &ns, "-b", &target.broker()]),
        words(&["producer", "-n", &ns, "-b", &target.broker()]),
        words(&[
            "consumerConnection",
            "-n",
            &ns,
            "-g",
            &format!("{consumer_group}_none"),
        ]),
        words(&["@systemTopics", &ns]),
        words(&[
            "resetOffsetByTime",
            "-n",
            &ns,
            "-g",
            &consumer_group,
            "-t",
            &topic,
            "-s",
            "0",
        ]),
        words(&["@consumed", "10"]),
        words(&["@consumeDirectly", &ns, &consumer_group, &topic]),
        words(&["@consumerStatus", &ns, &consumer_group, &topic]),
        // The group's progress with its live consumer (the command reads the group's retry
        // topic route too, which a group that never consumed has not: Apache then fails).
        words(&["consumerProgress", "-n", &ns, "-g", &consumer_group]),
    ];
    let out = mqadmin(target, "live", &batch)?;
    let out: Vec<String> = out.iter().map(|o| normalise(o, target)).collect();
    expect("updateTopic", &out[0], &["create topic to BROKER success."])?;
    expect("@producer", &out[1], &["SEND_OK"])?;
    expect("@consumer", &out[2], &["consumed 5"])?;
    expect(
        "consumerConnection",
        &out[4],
        &[
            "#ClientId",
            "batch-consumer",
            "JAVA",
            "V5_3_3",
            "Below is subscription:",
            &topic,
            &format!("%RETRY%{consumer_group}"),
            "ConsumeType: CONSUME_PASSIVELY",
            "MessageModel: CLUSTERING",
            "ConsumeFromWhere: CONSUME_FROM_FIRST_OFFSET",
        ],
    )?;
    expect(
        "producerConnection",
        &out[5],
        &["0001  ", "batch-producer", "JAVA", "V5_3_3"],
    )?;
    expect(
        "consumerStatus",
        &out[6],
        &[
            "#ConsumerRunningInfoFile",
            "batch-consumer",
            "Same subscription in the same group of consumer",
            "Rebalance OK",
        ],
    )?;
    // `#Topic #Consumer Group #Accumulation #InTPS #OutTPS #InMsg24Hour #OutMsg24Hour`: the
    // last two count what the last minute's samples saw.
    let row = out[7]
        .lines()
        .find(|line| line.contains(&consumer_group))
        .with_context(|| format!("statsAll: no row for {consumer_group} in:\n{}", out[7]))?;
    let counts: Vec<&str> = row.split_whitespace().rev().take(2).collect();
    if counts != ["5", "5"] {
        bail!("statsAll: expected 5 messages in and 5 out in:\n{}", out[7]);
    }
    // CLONE_GROUP_OFFSET: the copy's offsets show in the broker's consume stats.
    expect(
        "cloneGroupOffset",
        &out[9],
        &[&format!(
            "clone group offset success. srcGroup[{consumer_group}], destGroup=[{clone_group}], topic[{topic}]"
        )],
    )?;
    let cloned = out[10]
        .lines()
        .find(|line| line.contains(&clone_group))
        .with_context(|| {
            format!(
                "brokerConsumeStats: no row for {clone_group} in:\n{}",
                out[10]
            )
        })?;
    if !cloned.contains(&topic) {
        bail!(
            "brokerConsumeStats: the clone's row is not on {topic}:\n{}",
            out[10]
        );
    }
    // GET_BROKER_CONSUME_STATS: a row per consumed queue of every group, and the total backlog.
    expect(
        "brokerConsumeStats",
        &out[10],
        &["#Topic", "#Diff", &topic, &consumer_group, "Diff Total: "],
    )?;
    // GET_ALL_PRODUCER_INFO.
    expect(
        "producer",
        &out[11],
        &[
            &format!("producer group ({producer_group}) instance : clientId="),
            "batch-producer",
            "remoteIP=/127.0.0.1:",
            "language=JAVA",
            "lastUpdateTimestamp=",
        ],
    )?;
    // A group that never consumed: mqadmin looks up its %RETRY% topic's route first, and the
    // name server has none (TOPIC_NOT_EXIST, 17, with Java's remark).
    for e in [
        "CODE: 17".to_string(),
        format!("No topic route info in name server for the topic: %RETRY%{consumer_group}_none"),
    ] {
        if !out[12].contains(&e) {
            bail!(
                "consumerConnection of an unknown group: expected {e:?} in:\n{}",
                out[12]
            );
        }
    }
    // GET_SYSTEM_TOPIC_LIST_FROM_NS (cluster and broker names), then FROM_BROKER.
    expect(
        "getSystemTopicList",
        &out[13],
        &[
            "system topic DefaultCluster\n",
            &format!("system topic {BROKER_NAME}\n"),
            "system topic SCHEDULE_TOPIC_XXXX\n",
            "system topic TBW102\n",
            "system topic RMQ_SYS_TRANS_HALF_TOPIC\n",
        ],
    )?;
    // INVOKE_BROKER_TO_RESET_OFFSET, server-side (Java 5's default): every queue to offset 0,
    // and the live consumer, told by its next pull, consumes the 5 messages again.
    expect(
        "resetOffsetByTime",
        &out[14],
        &["#brokerName", "#queueId", "#offset", BROKER_NAME],
    )?;
    let offsets: Vec<&str> = out[14]
        .lines()
        .filter(|line| line.starts_with(BROKER_NAME))
        .filter_map(|line| line.split_whitespace().nth(2))
        .collect();
    if offsets.is_empty() || offsets.iter().any(|o| *o != "0") {
        bail!(
            "resetOffsetByTime: expected offset 0 per queue in:\n{}",
            out[14]
        );
    }
    expect("consumed again after the reset", &out[15], &["consumed 10"])?;
    // CONSUME_MESSAGE_DIRECTLY: the broker hands the stored message to the consumer, whose
    // answer comes back through it.
    expect("consumeMessageDirectly", &out[16], &["direct CR_SUCCESS"])?;
    // INVOKE_BROKER_TO_GET_CONSUMER_STATUS: the broker asks the consumer for its offsets.
    expect(
        "getConsumeStatus",
        &out[17],
        &["status ", "@batch-consumer ", &format!(" {BROKER_NAME} ")],
    )?;
    expect(
        "consumerProgress",
        &out[18],
        &["#Topic", "#Broker Name", "#Diff", "Diff Total:", &topic],
    )?;
    Ok(())
}

/// Static topics (UPDATE_AND_CREATE_STATIC_TOPIC 513, GET_TOPIC_CONFIG with `lo`): created on the
/// cluster, grown, refused by mqadmin when the count would not change or would fall, remapped
/// onto the broker that holds it, shown in the route (`topicQueueMappingByBroker`) and in
/// `topicStatus` (the logical queues under `__syslo__global__`), refused over a plain topic, and
/// used by a producer and a push consumer.
#[test]
fn mqadmin_static_topics_answer_as_apache() {
    compare("mqadmin-static", default_options(), static_topics);
}

fn static_topics(target: &Target) -> Result<()> {
    let ns = target.namesrv();
    let id = unique_id("st");
    let topic = format!("mqadmin_static_{id}");
    let plain = format!("mqadmin_plain_{id}");
    let update = |topic: &str, queues: &str, to: &[&str]| {
        let mut command = words(&["updateStaticTopic", "-n", &ns, "-t", topic, "-qn", queues]);
        command.extend(words(to));
        command
    };
    let cluster = ["-c", "DefaultCluster"];
    let batch = [
        update(&topic, "4", &cluster),
        words(&["topicRoute", "-n", &ns, "-t", &topic]),
        update(&topic, "6", &["-b", BROKER_NAME]),
        update(&topic, "6", &["-b", BROKER_NAME]),
        update(&topic, "2", &cluster),
        words(&[
            "remappingStaticTopic",
            "-n",
            &ns,
            "-t",
            &topic,
            "-b",
            BROKER_NAME,
        ]),
        words(&["topicRoute", "-n", &ns, "-t", &topic]),
        words(&[
            "updateTopic",
            "-n",
            &ns,
            "-b",
            &target.broker(),
            "-t",
            &plain,
        ]),
        update(&plain, "4", &cluster),
        words(&["@producer", &ns, &format!("static_pg_{id}"), &topic, "5"]),
        words(&["@consumer", &ns, &format!("static_cg_{id}"), &topic, "5"]),
        words(&["topicStatus", "-n", &ns, "-t", &topic]),
    ];
    let out = mqadmin(target, "static", &batch);
    let out: Vec<String> = out?.iter().map(|o| normalise(o, target)).collect();
    let written = "The new mapping data is written to file ";
    expect("updateStaticTopic", &out[0], &[written])?;
    let mapping = |queues: usize| {
        let ids: Vec<String> = (0..queues).map(|i| format!("{i}:{i}")).collect();
        [
            format!("\"readQueueNums\":{queues},"),
            "\"topicQueueMappingByBroker\":{\n\t\t\"broker-a\":{".to_string(),
            format!("\"currIdMap\":{{{}\n", ids.join(",")),
            "\"scope\":\"__global__\"".to_string(),
            format!("\"totalQueues\":{queues}\n"),
        ]
    };
    let four = mapping(4);
    expect(
        "topicRoute of the new static topic",
        &out[1],
        &four.each_ref().map(String::as_str),
    )?;
    expect("updateStaticTopic to 6 queues", &out[2], &[written])?;
    // Refused by mqadmin's own checks, on what the broker showed of the mapping.
    let refusals = [
        (
            3,
            "The topic queue num is equal the existed queue num, do nothing",
        ),
        (4, "Cannot decrease the queue num for static topic 2 < 6"),
        (8, "Mapping info should not be null in broker broker-a"),
    ];
    for (i, remark) in refusals {
        if !out[i].contains(remark) {
            bail!("updateStaticTopic: expected {remark:?} in:\n{}", out[i]);
        }
    }
    // `remappingStaticTopic` prints "old" for both files (sic).
    if out[5]
        .matches("The old mapping data is written to file ")
        .count()
        != 2
    {
        bail!(
            "remappingStaticTopic: expected both mapping files in:\n{}",
            out[5]
        );
    }
    expect("remappingStaticTopic", &out[5], &[])?;
    let six = mapping(6);
    expect(
        "topicRoute after the remapping",
        &out[6],
        &six.each_ref().map(String::as_str),
    )?;
    expect("updateTopic", &out[7], &["create topic to BROKER success."])?;
    if out[9].matches("SEND_OK").count() != 5 {
        bail!(
            "@producer on the static topic: expected 5 SEND_OK in:\n{}",
            out[9]
        );
    }
    expect("@consumer on the static topic", &out[10], &["consumed 5"])?;
    // Each logical queue (under the mock broker name) and its physical queue, with the 5
    // messages spread over them.
    for broker in ["__syslo__global__", BROKER_NAME] {
        let max_offsets: Vec<i64> = out[11]
            .lines()
            .filter(|line| line.starts_with(&format!("{broker} ")))
            .filter_map(|line| line.split_whitespace().nth(3)?.parse().ok())
            .collect();
        if max_offsets.len() != 6 || max_offsets.iter().sum::<i64>() != 5 {
            bail!(
                "topicStatus: expected 6 queues of {broker} holding 5 in:\n{}",
                out[11]
            );
        }
    }
    Ok(())
}

/// The client-side reset (`useServerSideResetOffset=false`): INVOKE_BROKER_TO_RESET_OFFSET
/// answers with the offsets and pushes them to the live consumer (RESET_CONSUMER_CLIENT_OFFSET),
/// which consumes again from them; a group that committed nothing is refused. Then
/// `startMonitoring` with that consumer live: its rounds go to the tools' log.
#[test]
fn mqadmin_client_side_reset_answers_as_apache() {
    let opts = Options {
        broker_settings: vec![("useServerSideResetOffset", "false".into())],
        ..default_options()
    };
    compare("mqadmin-client-reset", opts, client_side_reset);
}

fn client_side_reset(target: &Target) -> Result<()> {
    let ns = target.namesrv();
    let id = unique_id("cr");
    let topic = format!("mqadmin_reset_{id}");
    let group = format!("mqadmin_reset_cg_{id}");
    let reset = |group: &str| {
        words(&[
            "resetOffsetByTime",
            "-n",
            &ns,
            "-g",
            group,
            "-t",
            &topic,
            "-s",
            "0",
        ])
    };
    // One queue: the broker refuses the reset while any queue lacks a committed offset.
    let broker = target.broker();
    let create = [
        "updateTopic",
        "-n",
        &ns,
        "-b",
        &broker,
        "-t",
        &topic,
        "-r",
        "1",
        "-w",
        "1",
    ];
    let batch = [
        words(&create),
        words(&[
            "@producer",
            &ns,
            &format!("mqadmin_reset_pg_{id}"),
            &topic,
            "5",
        ]),
        words(&["@consumer", &ns, &group, &topic, "5"]),
        // The consumer first commits its offset 10 s after it starts.
        words(&["@sleep", "12000"]),
        reset(&group),
        words(&["@consumed", "10"]),
        reset(&format!("{group}_none")),
        // The monitor's first round starts 20 s after it; it never returns.
        words(&["@property", "rocketmq.namesrv.addr", &ns]),
        words(&["@background", "30000", "startMonitoring"]),
    ];
    let out = mqadmin(target, "client-reset", &batch)?;
    let out: Vec<String> = out.iter().map(|o| normalise(o, target)).collect();
    expect("updateTopic", &out[0], &["create topic to BROKER success."])?;
    expect("@consumer", &out[2], &["consumed 5"])?;
    // The table the broker answered, and the push the consumer followed.
    expect(
        "resetOffsetByTime",
        &out[4],
        &["#brokerName", "#queueId", "#offset"],
    )?;
    let row = row(&out[4], BROKER_NAME);
    if row.as_deref() != Some(&[BROKER_NAME, "0", "0"][..]) {
        bail!(
            "resetOffsetByTime: expected queue 0 at offset 0 in:\n{}",
            out[4]
        );
    }
    expect(
        "consumed again after the client-side reset",
        &out[5],
        &["consumed 10"],
    )?;
    let refused = format!("CODE: 1  DESC: THe consumer group <{group}_none> not exist");
    if !out[6].contains(&refused) {
        bail!(
            "resetOffsetByTime of a group without offsets: expected {refused:?} in:\n{}",
            out[6]
        );
    }
    // startMonitoring prints nothing: its rounds go to the tools' log under user.home.
    let log = target
        .dir()
        .join("mqadmin-client-reset/logs/rocketmqlogs/tools_default.log");
    let log = fs::read_to_string(&log).with_context(|| format!("{}", log.display()))?;
    let undone = format!(
        "reportUndoneMsgs: UndoneMsgs [consumerGroup={group}, topic={topic}, undoneMsgsTotal=0,"
    );
    for e in ["[MONITOR] ====", "beginRound", &undone, "endRound"] {
        if !log.contains(e) {
            bail!("startMonitoring: expected {e:?} in the tools' log:\n{log}");
        }
    }
    Ok(())
}

/// Settings that take effect at once, as on Java: `fileReservedTime` (an operator's
/// `deleteExpiredCommitLog` deletes nothing young until the reserved time is cut to 0 hours,
/// then the full 10 MiB segment goes), and `autoCreateTopicEnable` false, which stops producers
/// from creating topics by sending to them (and, as Java does, leaves the template topic without
/// its inherit bit, so that turning it on again does not bring auto-creation back before a
/// restart).
#[test]
fn mqadmin_live_settings_answer_as_apache() {
    compare("mqadmin-live-settings", default_options(), live_settings);
}

fn live_settings(target: &Target) -> Result<()> {
    let ns = target.namesrv();
    let broker = target.broker();
    let id = unique_id("ls");
    let set = |key: &str, value: &str| update_broker_config(&ns, &broker, key, value);
    // mqadmin's sendMessage works once per JVM: a producer of its own group for each send.
    let send = |step: &str| {
        let (group, topic) = (
            format!("mqadmin_pg_{step}_{id}"),
            format!("mqadmin_auto_{step}_{id}"),
        );
        words(&["@producer", &ns, &group, &topic, "1"])
    };
    let retained = format!("mqadmin_retained_{id}");
    let status = words(&["brokerStatus", "-n", &ns, "-b", &broker]);
    let batch = [
        words(&["updateTopic", "-n", &ns, "-b", &broker, "-t", &retained]),
        // 15 MiB: a full 10 MiB CommitLog segment and part of the next.
        words(&[
            "@fill",
            &ns,
            &format!("mqadmin_fill_{id}"),
            &retained,
            "60",
            "262144",
        ]),
        words(&["deleteExpiredCommitLog", "-n", &ns, "-b", &broker]),
        // Both brokers run a retention round every 10 s (cleanResourceInterval), Java's first
        // one 60 s after it starts; the operator's request holds for 20 rounds.
        words(&["@sleep", "65000"]),
        status.clone(),
        set("fileReservedTime", "0"),
        words(&["@sleep", "12000"]),
        status,
        send("before"),
        set("autoCreateTopicEnable", "false"),
        send("off"),
        words(&["topicRoute", "-n", &ns, "-t", "TBW102"]),
        set("autoCreateTopicEnable", "true"),
        send("on"),
        words(&["getBrokerConfig", "-n", &ns, "-b", &broker]),
    ];
    let out = mqadmin(target, "live-settings", &batch)?;
    let out: Vec<String> = out.iter().map(|o| normalise(o, target)).collect();
    expect("@fill", &out[1], &["filled 60"])?;
    expect("deleteExpiredCommitLog", &out[2], &["success"])?;
    // `brokerStatus` prints `key : value` lines.
    let min_offset = |i: usize| {
        out[i].lines().find_map(|line| {
            let (key, value) = line.split_once(':')?;
            (key.trim() == "commitLogMinOffset").then(|| value.trim().to_string())
        })
    };
    if min_offset(4).as_deref() != Some("0") {
        bail!("brokerStatus: a young segment went:\n{}", out[4]);
    }
    if min_offset(7).as_deref() != Some("10485760") {
        bail!(
            "brokerStatus: expected the full segment gone with fileReservedTime=0:\n{}",
            out[7]
        );
    }
    let out = &out[8..];
    expect("a send before", &out[0], &["SEND_OK"])?;
    for i in [1, 4] {
        expect(
            "updateBrokerConfig",
            &out[i],
            &["update broker config success, BROKER"],
        )?;
    }
    // Refused by the broker (TOPIC_NOT_EXIST) each time the producer tries, off and on again.
    for (i, step) in [(2, "off"), (5, "on")] {
        let refusals = [
            "Send [3] times, still failed".to_string(),
            format!(
                "CODE: 17  DESC: topic[mqadmin_auto_{step}_{id}] not exist, apply first please!"
            ),
        ];
        for e in refusals {
            if !out[i].contains(&e) {
                bail!(
                    "a send with autoCreateTopicEnable {step}: expected {e:?} in:\n{}",
                    out[i]
                );
            }
        }
    }
    // The name servers still have the template as it was registered.
    if route_perms(&out[3]) != [7] {
        bail!("topicRoute TBW102: expected perm 7 in:\n{}", out[3]);
    }
    if property(&out[6], "autoCreateTopicEnable").as_deref() != Some("true") {
        bail!(
            "getBrokerConfig: expected autoCreateTopicEnable=true in:\n{}",
            out[6]
        );
    }
    Ok(())
}

/// A static topic over two broker groups (UPDATE_AND_CREATE_STATIC_TOPIC on each, then the
/// logical queues served where they are led): created over the cluster, written and read by a
/// producer and a push consumer, remapped onto broker-b, written again (the moved queues go on
/// from logical offset 10,000), read on by the same group and read whole by a new one, whose
/// pulls of the older stretches broker-b passes on to broker-a. Which logical queues land where
/// is mqadmin's random choice, so the checks count rather than match ids.
#[test]
fn mqadmin_static_topic_over_two_groups_answers_as_apache() {
    let opts = Options {
        more_broker_groups: vec![BROKER_B],
        ..default_options()
    };
    compare("mqadmin-static2", opts, static_topic_over_two_groups);
}

const BROKER_B: &str = "broker-b";

/// `(broker, queue id, queue offset)` of each `SEND_OK` line of an `@producer`.
fn sends(output: &str) -> Vec<(String, i32, i64)> {
    output
        .lines()
        .filter_map(|line| {
            let mut words = line.split_whitespace();
            if words.next()? != "SEND_OK" {
                return None;
            }
            let broker = words.next()?.to_string();
            Some((
                broker,
                words.next()?.parse().ok()?,
                words.next()?.parse().ok()?,
            ))
        })
        .collect()
}

/// The `(min, max)` offsets of `topicStatus`'s rows for `broker`, sorted.
fn status_rows(output: &str, broker: &str) -> Vec<(i64, i64)> {
    let mut rows: Vec<(i64, i64)> = output
        .lines()
        .filter(|line| line.starts_with(&format!("{broker} ")))
        .filter_map(|line| {
            let words: Vec<&str> = line.split_whitespace().collect();
            Some((words.get(2)?.parse().ok()?, words.get(3)?.parse().ok()?))
        })
        .collect();
    rows.sort();
    rows
}

/// How many logical queues each broker group leads in a `topicRoute` (its `currIdMap`s).
fn led_queues(route: &str) -> Vec<usize> {
    route
        .split("\"currIdMap\":{")
        .skip(1)
        .map(|rest| rest.split('}').next().unwrap_or("").matches(':').count())
        .collect()
}

/// The count an `@consumer` printed (`consumed N`).
fn consumed(output: &str) -> Option<usize> {
    output
        .lines()
        .find_map(|line| line.strip_prefix("consumed ")?.trim().parse().ok())
}

fn static_topic_over_two_groups(target: &Target) -> Result<()> {
    let ns = target.namesrv();
    let id = unique_id("s2");
    let topic = format!("mqadmin_static2_{id}");
    let (cg1, cg2) = (format!("s2_cg1_{id}"), format!("s2_cg2_{id}"));
    let producer = format!("s2_pg_{id}");
    let create = words(&[
        "updateStaticTopic",
        "-n",
        &ns,
        "-t",
        &topic,
        "-qn",
        "4",
        "-c",
        "DefaultCluster",
    ]);
    let remap = words(&[
        "remappingStaticTopic",
        "-n",
        &ns,
        "-t",
        &topic,
        "-b",
        BROKER_B,
    ]);
    let route = words(&["topicRoute", "-n", &ns, "-t", &topic]);
    let status = words(&["topicStatus", "-n", &ns, "-t", &topic]);
    // A JVM per phase: a client caches routes for 30 s, and one client per JVM consumes.
    let first = [
        create,
        route.clone(),
        words(&["@producer", &ns, &producer, &topic, "8"]),
        words(&["@consumer", &ns, &cg1, &topic, "8"]),
        // The consumer commits its offsets every 5 s from 10 s after its start.
        words(&["@sleep", "11000"]),
        status.clone(),
        words(&["consumerProgress", "-n", &ns, "-g", &cg1]),
        remap,
        route,
    ];
    let second = [
        words(&["@producer", &ns, &producer, &topic, "8"]),
        words(&["@consumer", &ns, &cg1, &topic, "8"]),
        status,
    ];
    let third = [words(&["@consumer", &ns, &cg2, &topic, "16"])];
    let outputs = mqadmin(target, "static2-a", &first).and_then(|first| {
        let second = mqadmin(target, "static2-b", &second)?;
        let third = mqadmin(target, "static2-c", &third)?;
        Ok((first, second, third))
    });
    let (first, second, third) = outputs?;

    expect(
        "updateStaticTopic over the cluster",
        &first[0],
        &["The new mapping data is written to file "],
    )?;
    // Two logical queues led by each group, each on a physical queue of its own.
    expect(
        "topicRoute of the new static topic",
        &first[1],
        &[
            "\"readQueueNums\":2,",
            "\"broker-a\":{",
            "\"broker-b\":{",
            "\"totalQueues\":4",
        ],
    )?;
    if led_queues(&first[1]) != [2, 2] {
        bail!(
            "topicRoute: expected 4 logical queues led in:\n{}",
            first[1]
        );
    }
    // Each logical queue got two messages at logical offsets 0 and 1.
    let mut sent = sends(&first[2]);
    sent.sort_by_key(|(_, queue, offset)| (*queue, *offset));
    let offsets: Vec<(i32, i64)> = sent.iter().map(|(_, q, o)| (*q, *o)).collect();
    let expected: Vec<(i32, i64)> = (0..4).flat_map(|q| [(q, 0), (q, 1)]).collect();
    if offsets != expected {
        bail!(
            "@producer: expected offsets 0 and 1 on each logical queue in:\n{}",
            first[2]
        );
    }
    if consumed(&first[3]).unwrap_or(0) < 8 {
        bail!("@consumer: expected 8 consumed in:\n{}", first[3]);
    }
    let two_each = vec![(0, 2); 4];
    if status_rows(&first[5], "__syslo__global__") != two_each
        || status_rows(&first[5], "broker-a") != vec![(0, 2); 2]
        || status_rows(&first[5], "broker-b") != vec![(0, 2); 2]
    {
        bail!(
            "topicStatus: expected 2 messages in each queue in:\n{}",
            first[5]
        );
    }
    // Every logical queue, consumed to its end.
    let progress_rows = first[6]
        .lines()
        .filter(|line| line.contains(" __syslo__global__ "))
        .count();
    if progress_rows != 4 || !first[6].contains("Consume Diff Total: 0") {
        bail!(
            "consumerProgress: expected 4 logical queues consumed to the end in:\n{}",
            first[6]
        );
    }
    expect("consumerProgress", &first[6], &[])?;
    if first[7]
        .matches("The old mapping data is written to file ")
        .count()
        != 2
    {
        bail!(
            "remappingStaticTopic: expected both mapping files in:\n{}",
            first[7]
        );
    }
    expect("remappingStaticTopic", &first[7], &[])?;
    expect(
        "topicRoute after the remapping",
        &first[8],
        &["\"readQueueNums\":4,"],
    )?;
    let mut led = led_queues(&first[8]);
    led.sort();
    if led != [0, 4] {
        bail!(
            "topicRoute after the remapping: expected broker-b to lead all 4 in:\n{}",
            first[8]
        );
    }

    // All four logical queues are on broker-b now; the two moved ones go on from 10,000.
    let sent = sends(&second[0]);
    let mut by_queue: Vec<(i32, i64)> = sent.iter().map(|(_, q, o)| (*q, *o)).collect();
    by_queue.sort();
    let stayed = by_queue.iter().filter(|(_, o)| (2..4).contains(o)).count();
    let moved = by_queue
        .iter()
        .filter(|(_, o)| (10_000..10_002).contains(o))
        .count();
    if sent.len() != 8 || sent.iter().any(|(b, _, _)| b != BROKER_B) || stayed != 4 || moved != 4 {
        bail!("@producer after the remapping: expected 4 sends at 2..4 and 4 at 10000.. on broker-b in:\n{}", second[0]);
    }
    if consumed(&second[1]).unwrap_or(0) < 8 {
        bail!(
            "@consumer after the remapping: expected 8 consumed in:\n{}",
            second[1]
        );
    }
    let mut logical = vec![(0, 4), (0, 4), (0, 10_002), (0, 10_002)];
    logical.sort();
    if status_rows(&second[2], "__syslo__global__") != logical
        || status_rows(&second[2], "broker-a") != vec![(0, 2); 2]
        || status_rows(&second[2], "broker-b") != vec![(0, 2), (0, 2), (0, 4), (0, 4)]
    {
        bail!(
            "topicStatus after the remapping: unexpected offsets in:\n{}",
            second[2]
        );
    }
    // A new group reads everything, the older stretches through broker-b from broker-a.
    if consumed(&third[0]).unwrap_or(0) < 16 {
        bail!(
            "@consumer of a new group: expected 16 consumed in:\n{}",
            third[0]
        );
    }
    Ok(())
}
