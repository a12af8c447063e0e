//! ACL 1.0 with the official Java clients' `AclClientRPCHook`: a signed client with the right
//! secret sends and consumes; a wrong secret, a missing signature, a denied topic (PUB denied,
//! SUB denied) and an admin request from a non-admin account are refused with Java's
//! AclException text; an edit of `plain_acl.yml` takes effect without a restart.
//!
//! Apache 5.3 removed ACL 1.0 (its `aclEnable` is a dead key; ACL 2.0 replaced it), so the
//! reference is the newest 4.9 broker on Maven Central:
//!   SKIFF_COMPAT_TARGET=apache SKIFF_COMPAT_APACHE_VERSION=4.9.7 cargo test -p skiff-compat-tests --test acl
//! See `java/src/skiff/compat/Acl.java`.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use anyhow::{bail, Result};
use skiff_compat_tests::java::Client;
use skiff_compat_tests::settings;
use skiff_compat_tests::suite::{unique_id, SCENARIO_TIMEOUT};
use skiff_compat_tests::target::{AclOptions, FlushDisk, Options, Target};

/// Each test runs its own broker; one at a time keeps 2 cores from thrashing.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

const ADMIN: (&str, &str) = ("skiffAdmin1", "adminSecret1");
const USER: (&str, &str) = ("skiffUser01", "userSecret01");

fn plain_acl(reload_topic_perm: &str) -> String {
    format!(
        "\
globalWhiteRemoteAddresses:

accounts:
  - accessKey: {admin}
    secretKey: {admin_secret}
    admin: true
  - accessKey: {user}
    secretKey: {user_secret}
    whiteRemoteAddress:
    admin: false
    defaultTopicPerm: PUB|SUB
    defaultGroupPerm: SUB
    topicPerms:
      - acl_pub_denied=SUB
      - acl_sub_denied=PUB
      - acl_reload={reload_topic_perm}
",
        admin = ADMIN.0,
        admin_secret = ADMIN.1,
        user = USER.0,
        user_secret = USER.1,
    )
}

fn start(label: &str) -> Target {
    let mut opts = Options::new(FlushDisk::Async).expect("settings");
    opts.acl = Some(AclOptions {
        plain_acl_yml: plain_acl("PUB|SUB"),
        probe_access_key: ADMIN.0.into(),
        probe_secret_key: ADMIN.1.into(),
    });
    Target::start_with(label, opts).expect("start the target")
}

/// Runs one `Acl.java` mode as `(ak, sk)` (None: an unsigned client), expecting `expect`
/// ("ok" or a text of the refusal).
fn run(
    target: &Target,
    client: &Client,
    mode: &str,
    creds: Option<(&str, &str)>,
    extra: &[(&str, &str)],
    expect: &str,
) -> Result<String> {
    let id = unique_id(&client.version);
    let namesrv = target.namesrv();
    let broker = target.broker();
    let mut args = vec![
        ("namesrv", namesrv.as_str()),
        ("broker", broker.as_str()),
        ("id", id.as_str()),
        ("expect", expect),
    ];
    if let Some((ak, sk)) = creds {
        args.push(("ak", ak));
        args.push(("sk", sk));
    }
    args.extend_from_slice(extra);
    let dir = target.dir().join("runs").join(format!("{mode}-{id}"));
    client.run(mode, &args, &dir, SCENARIO_TIMEOUT)
}

fn report(result: Result<()>, target: &Target) {
    if let Err(e) = result {
        panic!("{e:#}\n{}", target.logs());
    }
}

#[test]
fn signed_clients_are_let_in_and_others_refused() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let target = start("acl");
    let result = (|| {
        for version in settings::client_versions() {
            let client = Client::get(&version)?;
            let id = unique_id(&version);
            let topic = format!("acl_ok_{id}");
            let group = format!("acl_group_{id}");
            let t = [("topic", topic.as_str()), ("group", group.as_str())];
            // Right key: send, then consume through heartbeats, pulls and offset commits.
            run(&target, &client, "acl-send-receive", Some(USER), &t, "ok")?;
            // Wrong secret; no hook at all; an account the file does not know.
            run(
                &target,
                &client,
                "acl-send",
                Some((USER.0, "wrongSecret1")),
                &t,
                "Check signature failed for accessKey=skiffUser01",
            )?;
            run(
                &target,
                &client,
                "acl-send",
                None,
                &t,
                "No accessKey is configured",
            )?;
            run(
                &target,
                &client,
                "acl-send",
                Some(("nobodyKnows", "secret123")),
                &t,
                "No acl config for nobodyKnows",
            )?;
            // PUB denied (the topic is SUB only).
            run(
                &target,
                &client,
                "acl-send",
                Some(USER),
                &[("topic", "acl_pub_denied")],
                "No default permission for topic:acl_pub_denied",
            )?;
            // Admin code without admin, then with the admin account.
            let created = format!("acl_sub_denied_{id}");
            run(
                &target,
                &client,
                "acl-admin",
                Some(USER),
                &[("topic", created.as_str())],
                "Need admin permission for request code=17, but accessKey=skiffUser01 is not",
            )?;
            run(
                &target,
                &client,
                "acl-admin",
                Some(ADMIN),
                &[("topic", "acl_sub_denied")],
                "ok",
            )?;
            // SUB denied (the topic is PUB only): pulling it is refused.
            run(
                &target,
                &client,
                "acl-pull",
                Some(USER),
                &[("topic", "acl_sub_denied"), ("group", group.as_str())],
                "No default permission for topic:acl_sub_denied",
            )?;
        }
        Ok(())
    })();
    report(result, &target);
}

#[test]
fn an_edited_acl_file_takes_effect_without_a_restart() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let target = start("acl-reload");
    let result = (|| {
        let version = settings::store_client();
        let client = Client::get(&version)?;
        let t = [("topic", "acl_reload")];
        run(&target, &client, "acl-send", Some(USER), &t, "ok")?;
        target.write_acl(&plain_acl("DENY"))?;
        // Java 4.9 looks at the file every 5 s, Skiff every 500 ms.
        let deadline = Instant::now() + Duration::from_secs(40);
        loop {
            match run(
                &target,
                &client,
                "acl-send",
                Some(USER),
                &t,
                "No default permission for topic:acl_reload",
            ) {
                Ok(_) => break,
                Err(e) if Instant::now() < deadline => {
                    eprintln!("not reloaded yet: {e:#}");
                    std::thread::sleep(Duration::from_secs(2));
                }
                Err(e) => bail!("the edit of plain_acl.yml never took effect: {e:#}"),
            }
        }
        Ok(())
    })();
    report(result, &target);
}
