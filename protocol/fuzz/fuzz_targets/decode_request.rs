//! Builds request frames from arbitrary bytes (a request code, header fields drawn from the names
//! Skiff reads, and a body) and checks that `decode_request` never panics and that whatever it
//! accepts survives `encode_request` → `decode_request` unchanged.
//!
//! Input layout: `[code index][field count]` then per field `[name index][value len][value]`,
//! then the body.
#![no_main]

use libfuzzer_sys::fuzz_target;
use skiff_protocol::remoting::{decode_request, encode_request, Body, RemotingCommand};

const CODES: &[i32] = &[
    10, 11, 14, 15, 17, 21, 28, 29, 30, 31, 32, 34, 35, 38, 40, 41, 42, 103, 104, 105, 106, 200, 202, 206,
    208, 215, 216, 310, 320, 361,
];

const NAMES: &[&str] = &[
    "a",
    "b",
    "c",
    "d",
    "e",
    "f",
    "g",
    "h",
    "i",
    "j",
    "k",
    "l",
    "m",
    "n",
    "bname",
    "producerGroup",
    "topic",
    "defaultTopic",
    "defaultTopicQueueNums",
    "queueId",
    "sysFlag",
    "bornTimestamp",
    "flag",
    "properties",
    "reconsumeTimes",
    "unitMode",
    "maxReconsumeTimes",
    "batch",
    "consumerGroup",
    "queueOffset",
    "maxMsgNums",
    "commitOffset",
    "suspendTimeoutMillis",
    "subscription",
    "subVersion",
    "expressionType",
    "maxMsgBytes",
    "timestamp",
    "boundaryType",
    "clientID",
    "readQueueNums",
    "writeQueueNums",
    "perm",
    "topicFilterType",
    "topicSysFlag",
    "order",
    "attributes",
    "clusterName",
    "brokerName",
    "brokerAddr",
    "brokerId",
    "haServerAddr",
    "heartbeatTimeoutMillis",
    "enableActingMaster",
    "compressed",
    "bodyCrc32",
];

fuzz_target!(|data: &[u8]| {
    let [code, count, rest @ ..] = data else {
        return;
    };
    let mut cmd = RemotingCommand::request(
        CODES
            .get(usize::from(*code))
            .copied()
            .unwrap_or(i32::from(*code) * 7),
        1,
    );
    let mut rest = rest;
    for _ in 0..*count {
        let [name, len, tail @ ..] = rest else { break };
        let len = usize::from(*len).min(tail.len());
        let value = String::from_utf8_lossy(&tail[..len]).into_owned();
        cmd.ext_fields
            .insert(NAMES[usize::from(*name) % NAMES.len()].to_string(), value);
        rest = &tail[len..];
    }
    cmd.body = Body::from(rest.to_vec());
    if let Ok(request) = decode_request(&cmd) {
        let again = encode_request(&request, 1, false);
        assert_eq!(decode_request(&again), Ok(request));
    }
});
