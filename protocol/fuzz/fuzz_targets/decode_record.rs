//! Feeds arbitrary bytes to the stored-record decoder, as a damaged CommitLog or a hostile
//! replication peer would. Decoding must never panic, and whatever it accepts must stay inside the
//! declared record: every accessor works and the record's size is what its first word said.
#![no_main]

use libfuzzer_sys::fuzz_target;
use skiff_model::record::Record;

fuzz_target!(|data: &[u8]| {
    for check_crc in [false, true] {
        if let Ok(record) = Record::decode(data, check_crc) {
            let declared = i32::from_be_bytes([data[0], data[1], data[2], data[3]]);
            assert!(declared as usize <= data.len());
            let _ = record.parsed_properties();
            let _ = record.msg_id();
            let _ = record.to_fields();
        }
    }
});
