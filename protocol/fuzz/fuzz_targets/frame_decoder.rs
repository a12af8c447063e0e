//! Feeds arbitrary bytes to the remoting frame decoder, as a hostile peer would. Every frame it
//! accepts must re-encode, and re-encoding a decoded frame must be a fixed point.
#![no_main]

use bytes::BytesMut;
use libfuzzer_sys::fuzz_target;
use skiff_protocol::remoting::{decode_request, encode_frame, RemotingCodec, RemotingCommand};
use tokio_util::codec::Decoder;

fn round_trip(cmd: &RemotingCommand) -> RemotingCommand {
    let mut wire = BytesMut::new();
    encode_frame(cmd, &mut wire).expect("a decoded frame re-encodes");
    RemotingCodec::default()
        .decode(&mut wire)
        .expect("a re-encoded frame decodes")
        .expect("a re-encoded frame is complete")
}

fuzz_target!(|data: &[u8]| {
    let mut codec = RemotingCodec::new(64 * 1024);
    let mut buf = BytesMut::from(data);
    while let Ok(Some(cmd)) = codec.decode(&mut buf) {
        let _ = decode_request(&cmd);
        let once = round_trip(&cmd);
        assert_eq!(round_trip(&once), once);
    }
});
