//! ACL 1.0 inputs: arbitrary `plain_acl.yml` text, and arbitrary requests checked against a fixed
//! account file. Reading must end in accounts or an error, deciding in yes or no, never a panic;
//! and a request signed with an account's secret (as `AclClientRPCHook` signs it) must never
//! fail the signature check, whatever its fields and body.
//!
//! Input layout: the first byte picks the input (even: the rest is a `plain_acl.yml`; odd: a
//! request), a request is `[code index][field count]`, then per field `[name index][value
//! len][value]`, then the body.
#![no_main]

use std::net::IpAddr;
use std::sync::OnceLock;

use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use skiff_model::acl::AccessRequest;
use skiff_protocol::remoting::{access_request, Body, RemotingCommand};
use skiff_server::acl::{sign_command, Credentials, PlainAcl};

const CODES: &[i32] = &[
    10, 11, 12, 15, 17, 25, 34, 35, 36, 38, 100, 103, 207, 215, 310, 320,
];
const NAMES: &[&str] = &[
    "AccessKey",
    "Signature",
    "SecurityToken",
    "topic",
    "group",
    "consumerGroup",
    "a",
    "b",
    "_UNIQUE_KEY_QUERY",
    "queueId",
    "\u{e9}t\u{e9}",
    "",
];

const ACCOUNTS: &str = "\
globalWhiteRemoteAddresses:
  - 10.10.*.*
accounts:
  - accessKey: fuzzUser1
    secretKey: fuzzSecret1
    defaultTopicPerm: PUB
    defaultGroupPerm: SUB
    topicPerms: [denied=DENY, subOnly=SUB]
    groupPerms: [g1=DENY]
  - accessKey: fuzzAdmin
    secretKey: fuzzSecret2
    admin: true
";

fn accounts() -> &'static PlainAcl {
    static ACL: OnceLock<PlainAcl> = OnceLock::new();
    ACL.get_or_init(|| PlainAcl::parse(ACCOUNTS).expect("the fixed file parses"))
}

fn request(data: &[u8]) -> Option<RemotingCommand> {
    let (&code, rest) = data.split_first()?;
    let (&count, mut rest) = rest.split_first()?;
    let mut cmd = RemotingCommand::request(CODES[usize::from(code) % CODES.len()], 1);
    for _ in 0..count % 8 {
        let (&name, r) = rest.split_first()?;
        let (&len, r) = r.split_first()?;
        let len = usize::from(len).min(r.len());
        let value = String::from_utf8_lossy(&r[..len]).into_owned();
        cmd.set_ext(NAMES[usize::from(name) % NAMES.len()], value);
        rest = &r[len..];
    }
    cmd.body = Body::from(Bytes::copy_from_slice(rest));
    Some(cmd)
}

fuzz_target!(|data: &[u8]| {
    let [mode, rest @ ..] = data else {
        return;
    };
    let local: IpAddr = "127.0.0.1".parse().unwrap();
    if mode % 2 == 0 {
        if let Ok(acl) = PlainAcl::parse(&String::from_utf8_lossy(rest)) {
            let _ = acl.validate(local, &AccessRequest::default());
            let _ = acl.validate("10.10.1.1".parse().unwrap(), &AccessRequest::default());
        }
        return;
    }
    let Some(mut cmd) = request(rest) else {
        return;
    };
    let _ = accounts().validate(local, &access_request(&cmd));
    let credentials = Credentials {
        access_key: "fuzzUser1".into(),
        secret_key: "fuzzSecret1".into(),
    };
    sign_command(&mut cmd, &credentials);
    let access = access_request(&cmd);
    if let Err(why) = accounts().validate(local, &access) {
        assert!(!why.starts_with("Check signature failed"), "{why}: {cmd:?}");
    }
});
