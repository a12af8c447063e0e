//! The image against a real engine: start it, then run the image's own `skiff health` and
//! `skiff bench` as clients in second containers on the host network. Needs a Docker engine and
//! the image (scripts/docker-engine.sh, scripts/image.sh); fails, saying so, without them.

use std::process::Command;
use std::time::Instant;

use testcontainers::clients::Cli;
use testcontainers_skiff::Skiff;

fn image() -> String {
    std::env::var("SKIFF_IMAGE").unwrap_or_else(|_| "skiff:latest".into())
}

/// `docker run --rm --network host <image> <args>`: the image's skiff as a client.
fn skiff_client(args: &[&str]) -> (bool, String) {
    let out = Command::new("docker")
        .args(["run", "--rm", "--network", "host", &image()])
        .args(args)
        .output()
        .expect("run the docker CLI");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

fn preflight() {
    let info = Command::new("docker").arg("info").output();
    assert!(
        info.is_ok_and(|o| o.status.success()),
        "no Docker engine answers: start one with scripts/docker-engine.sh (as root)"
    );
    let inspect = Command::new("docker")
        .args(["image", "inspect", &image()])
        .output()
        .expect("run the docker CLI");
    assert!(
        inspect.status.success(),
        "image {} not found: build it with scripts/image.sh",
        image()
    );
}

#[test]
fn started_skiff_is_registered_and_carries_messages() {
    preflight();
    let docker = Cli::default();
    let skiff = Skiff::default().with_setting("brokerName", "broker-tc");
    let (namesrv, broker) = (skiff.namesrv_addr(), skiff.broker_addr());
    let started = Instant::now();
    let container = docker.run(skiff.runnable());
    println!("ready in {:?} ({})", started.elapsed(), container.id());

    let (ok, out) = skiff_client(&["health", "--namesrv", &namesrv, "--broker", &broker]);
    assert!(ok, "{out}");
    assert!(out.contains("broker broker-tc at"), "{out}");

    let (ok, out) = skiff_client(&[
        "bench",
        "both",
        "--namesrv",
        &namesrv,
        "--messages",
        "500",
        "--producers",
        "2",
    ]);
    assert!(ok, "bench both failed:\n{out}");
}
