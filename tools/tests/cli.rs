//! The `skiff` binary as a user runs it: help, config errors, and a standalone start and stop.

mod common;

use std::net::{TcpListener, TcpStream};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use common::{address, Standalone};

fn skiff(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_skiff"))
        .args(args)
        .env("RUST_LOG", "info")
        .output()
        .expect("run skiff")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn help_lists_commands_and_examples() {
    let out = skiff(&["--help"]);
    assert!(out.status.success());
    let help = text(&out.stdout);
    for expected in ["standalone", "namesrv", "broker", "Examples:", "RUST_LOG"] {
        assert!(
            help.contains(expected),
            "{expected:?} missing from:\n{help}"
        );
    }
}

#[test]
fn standalone_help_teaches_defaults() {
    let out = skiff(&["standalone", "--help"]);
    assert!(out.status.success());
    let help = text(&out.stdout);
    for expected in [
        "--data",
        "$HOME/skiff-data",
        "127.0.0.1:9876",
        "127.0.0.1:10911",
        "--set",
        "namesrvAddr=127.0.0.1:9876",
    ] {
        assert!(
            help.contains(expected),
            "{expected:?} missing from:\n{help}"
        );
    }
}

#[test]
fn bad_config_file_names_file_line_and_key() {
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("broker.conf");
    std::fs::write(
        &conf,
        "brokerName=broker-a\nsendMessageThreadPoolNums=4\nflushDiskType=SYNC\n",
    )
    .unwrap();
    let out = skiff(&["broker", "-c", conf.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let stderr = text(&out.stderr);
    let expected = format!(
        "{}:3: flushDiskType = \"SYNC\": expected ASYNC_FLUSH or SYNC_FLUSH",
        conf.display()
    );
    assert!(stderr.contains(&expected), "{stderr}");
    assert!(
        stderr.contains("ignored: Skiff does not implement sendMessageThreadPoolNums"),
        "{stderr}"
    );
}

#[test]
fn misspelled_setting_suggests_the_right_one() {
    let out = skiff(&["standalone", "--set", "brokerNmae=x"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains(r#"--set: unknown setting "brokerNmae" (did you mean brokerName?)"#),
        "{stderr}"
    );
}

#[test]
fn missing_config_file_is_a_config_error() {
    let out = skiff(&["broker", "-c", "/nonexistent/broker.conf"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(text(&out.stderr).contains("cannot read /nonexistent/broker.conf"));
}

#[test]
fn standalone_starts_on_free_ports_and_stops_on_sigterm() {
    let mut skiff = Standalone::start(&["--broker-listen", "127.0.0.1:0"]);
    let banner = skiff
        .banner(Duration::from_secs(60))
        .expect("standalone printed its addresses");
    let namesrv = address(&banner, "name server");
    let broker = address(&banner, "broker");
    assert_ne!(namesrv.port(), 0);
    assert_ne!(broker.port(), 0);
    assert!(banner
        .iter()
        .any(|line| line.contains(&format!("namesrvAddr={namesrv}"))));
    TcpStream::connect_timeout(&namesrv, Duration::from_secs(5)).expect("name server accepts");
    TcpStream::connect_timeout(&broker, Duration::from_secs(5)).expect("broker accepts");

    skiff.terminate();
    let status = skiff
        .wait(Duration::from_secs(10))
        .expect("stopped within 10 s of SIGTERM");
    assert_eq!(status.code(), Some(0));
}

#[test]
fn busy_broker_port_is_explained() {
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    let mut skiff = Standalone::start(&["--broker-listen", &format!("127.0.0.1:{port}")]);
    let status = skiff
        .wait(Duration::from_secs(60))
        .expect("skiff gave up on the busy port");
    assert_eq!(status.code(), Some(1));
    // The reader thread may still be copying the last lines.
    let deadline = Instant::now() + Duration::from_secs(5);
    let expected = format!("port {port} is in use: is another broker running? use --broker-listen");
    while !skiff.stderr().contains(&expected) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(skiff.stderr().contains(&expected), "{}", skiff.stderr());
    drop(taken);
}

#[test]
fn health_checks_registration_and_heartbeat() {
    let mut skiff = Standalone::start(&["--broker-listen", "127.0.0.1:0"]);
    let banner = skiff
        .banner(Duration::from_secs(60))
        .expect("standalone printed its addresses");
    let namesrv = address(&banner, "name server").to_string();
    let broker = address(&banner, "broker").to_string();

    let out = skiff_health(&["--namesrv", &namesrv, "--broker", &broker]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains(&format!("healthy: broker broker-a at {broker}")),
        "{}",
        text(&out.stdout)
    );

    // A broker port nobody registered: the name server answers, but the check must fail.
    let out = skiff_health(&["--namesrv", &namesrv, "--broker", "127.0.0.1:1"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("lists no master broker on port 1"),
        "{}",
        text(&out.stderr)
    );

    skiff.terminate();
    skiff.wait(Duration::from_secs(10)).expect("stopped");
    let out = skiff_health(&[
        "--namesrv",
        &namesrv,
        "--broker",
        &broker,
        "--timeout",
        "1s",
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).starts_with("skiff health: not healthy: name server"),
        "{}",
        text(&out.stderr)
    );
}

/// `skiff health` without the image's SKIFF_* variables, whatever the test's environment holds.
fn skiff_health(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_skiff"))
        .arg("health")
        .args(args)
        .env_remove("SKIFF_NAMESRV_LISTEN")
        .env_remove("SKIFF_BROKER_LISTEN")
        .output()
        .expect("run skiff health")
}
