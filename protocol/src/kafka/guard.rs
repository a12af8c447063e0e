//! A walk over a request body before `kafka-protocol` decodes it, checking every array's element
//! count against the bytes left.
//!
//! The crate sizes each array with `Vec::with_capacity(n)` for the `n` on the wire, before it
//! reads an element: eight bytes claiming two billion topics would make the process abort on an
//! allocation failure (kafka-protocol-rs pull requests #152, #161 and #200, open at 0.18.0). Each
//! element takes at least `min` bytes, so a count above `remaining / min` cannot be a real
//! message; refused here, the decode never allocates more than the frame's size times the
//! element's size over its smallest encoding.
//!
//! The walk knows the layout of the requests Skiff serves, at the versions it advertises, up to
//! their last array; it reads nothing the decoder does not read again.

use kafka_protocol::messages::ApiKey;

/// A body the walk refuses: why.
pub type Refusal = String;

struct Walk<'a> {
    buf: &'a [u8],
    flexible: bool,
}

impl<'a> Walk<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], Refusal> {
        if self.buf.len() < n {
            return Err(format!(
                "truncated: {n} bytes wanted, {} left",
                self.buf.len()
            ));
        }
        let (head, rest) = self.buf.split_at(n);
        self.buf = rest;
        Ok(head)
    }

    fn skip(&mut self, n: usize) -> Result<(), Refusal> {
        self.take(n).map(|_| ())
    }

    fn i16(&mut self) -> Result<i16, Refusal> {
        Ok(i16::from_be_bytes(
            self.take(2)?.try_into().expect("2 bytes"),
        ))
    }

    fn i32(&mut self) -> Result<i32, Refusal> {
        Ok(i32::from_be_bytes(
            self.take(4)?.try_into().expect("4 bytes"),
        ))
    }

    fn uvarint(&mut self) -> Result<u64, Refusal> {
        let mut value = 0u64;
        for shift in (0..35).step_by(7) {
            let byte = self.take(1)?[0];
            value |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err("an unsigned varint longer than 5 bytes".into())
    }

    /// A length-prefixed field (string or bytes; `-1`, or compact 0, is null).
    fn field(&mut self, wide: bool) -> Result<(), Refusal> {
        let len = if self.flexible {
            self.uvarint()? as i64 - 1
        } else if wide {
            i64::from(self.i32()?)
        } else {
            i64::from(self.i16()?)
        };
        if len > 0 {
            self.skip(len as usize)?;
        }
        Ok(())
    }

    fn string(&mut self) -> Result<(), Refusal> {
        self.field(false)
    }

    fn bytes(&mut self) -> Result<(), Refusal> {
        self.field(true)
    }

    /// An array's element count, refused when `min`-byte elements could not fit in what is left.
    fn array(&mut self, min: usize) -> Result<usize, Refusal> {
        let count = if self.flexible {
            self.uvarint()?.saturating_sub(1)
        } else {
            u64::try_from(self.i32()?).unwrap_or(0)
        };
        let fits = self.buf.len() as u64 / min as u64;
        if count > fits {
            return Err(format!(
                "an array of {count} elements in {} bytes",
                self.buf.len()
            ));
        }
        Ok(count as usize)
    }

    fn tags(&mut self) -> Result<(), Refusal> {
        if !self.flexible {
            return Ok(());
        }
        let count = self.uvarint()?;
        for _ in 0..count {
            self.uvarint()?;
            let size = self.uvarint()? as usize;
            self.skip(size)?;
        }
        Ok(())
    }
}

/// Refuses a body of `api_key` at `version` whose arrays claim more elements than it holds.
pub fn check(api_key: ApiKey, version: i16, body: &[u8]) -> Result<(), Refusal> {
    let flexible = api_key.request_header_version(version) >= 2;
    let mut w = Walk {
        buf: body,
        flexible,
    };
    // Each element's smallest encoding: a compact string or array takes 1 byte, a classic
    // string 2 and a classic array 4; tagged fields 1.
    let (string, array, tags) = if flexible { (1, 1, 1) } else { (2, 4, 0) };
    match api_key {
        ApiKey::Metadata => {
            let uuid = if version >= 10 { 16 } else { 0 };
            for _ in 0..w.array(uuid + string + tags)? {
                w.skip(uuid)?;
                w.string()?;
                w.tags()?;
            }
        }
        ApiKey::Produce => {
            w.string()?; // transactional id
            w.skip(2 + 4)?; // acks, timeout
            for _ in 0..w.array(string + array + tags)? {
                w.string()?;
                for _ in 0..w.array(4 + array + tags)? {
                    w.skip(4)?;
                    w.bytes()?;
                    w.tags()?;
                }
                w.tags()?;
            }
        }
        ApiKey::Fetch => {
            // replica id, max wait, min bytes, max bytes, isolation, session id and epoch
            w.skip(4 + 4 + 4 + 4 + 1 + if version >= 7 { 8 } else { 0 })?;
            let partition = 4
                + if version >= 9 { 4 } else { 0 }
                + 8
                + if version >= 12 { 4 } else { 0 }
                + if version >= 5 { 8 } else { 0 }
                + 4;
            for _ in 0..w.array(string + array + tags)? {
                w.string()?;
                for _ in 0..w.array(partition + tags)? {
                    w.skip(partition)?;
                    w.tags()?;
                }
                w.tags()?;
            }
            if version >= 7 {
                for _ in 0..w.array(string + array + tags)? {
                    w.string()?;
                    let partitions = w.array(4)?;
                    w.skip(4 * partitions)?;
                    w.tags()?;
                }
            }
        }
        ApiKey::ListOffsets => {
            w.skip(4 + if version >= 2 { 1 } else { 0 })?; // replica id, isolation
            let partition = 4 + if version >= 4 { 4 } else { 0 } + 8;
            for _ in 0..w.array(string + array + tags)? {
                w.string()?;
                for _ in 0..w.array(partition + tags)? {
                    w.skip(partition)?;
                    w.tags()?;
                }
                w.tags()?;
            }
        }
        ApiKey::FindCoordinator if version >= 4 => {
            w.skip(1)?; // key type
            for _ in 0..w.array(string)? {
                w.string()?;
            }
        }
        ApiKey::JoinGroup => {
            w.string()?; // group id
            w.skip(4 + if version >= 1 { 4 } else { 0 })?; // session and rebalance timeouts
            w.string()?; // member id
            if version >= 5 {
                w.string()?; // group instance id
            }
            w.string()?; // protocol type
            for _ in 0..w.array(string + array + tags)? {
                w.string()?;
                w.bytes()?;
                w.tags()?;
            }
        }
        ApiKey::SyncGroup => {
            w.string()?; // group id
            w.skip(4)?; // generation
            w.string()?; // member id
            if version >= 3 {
                w.string()?; // group instance id
            }
            if version >= 5 {
                w.string()?; // protocol type
                w.string()?; // protocol name
            }
            for _ in 0..w.array(string + array + tags)? {
                w.string()?;
                w.bytes()?;
                w.tags()?;
            }
        }
        ApiKey::LeaveGroup => {
            w.string()?; // group id
            if version >= 3 {
                for _ in 0..w.array(string + string + tags)? {
                    w.string()?; // member id
                    w.string()?; // group instance id
                    if version >= 5 {
                        w.string()?; // reason
                    }
                    w.tags()?;
                }
            }
        }
        ApiKey::OffsetCommit => {
            w.string()?; // group id
            if version >= 1 {
                w.skip(4)?; // generation
                w.string()?; // member id
            }
            if version >= 7 {
                w.string()?; // group instance id
            }
            if (2..=4).contains(&version) {
                w.skip(8)?; // retention time
            }
            let partition = 4 + 8 + if version >= 6 { 4 } else { 0 };
            for _ in 0..w.array(string + array + tags)? {
                w.string()?;
                for _ in 0..w.array(partition + string + tags)? {
                    w.skip(partition)?;
                    w.string()?; // metadata
                    w.tags()?;
                }
                w.tags()?;
            }
        }
        ApiKey::OffsetFetch => {
            let topics = |w: &mut Walk| -> Result<(), Refusal> {
                for _ in 0..w.array(string + array + tags)? {
                    w.string()?;
                    let partitions = w.array(4)?;
                    w.skip(4 * partitions)?;
                    w.tags()?;
                }
                Ok(())
            };
            if version >= 8 {
                for _ in 0..w.array(string + array + tags)? {
                    w.string()?; // group id
                    if version >= 9 {
                        w.string()?; // member id
                        w.skip(4)?; // member epoch
                    }
                    topics(&mut w)?;
                    w.tags()?;
                }
            } else {
                w.string()?; // group id
                topics(&mut w)?;
            }
        }
        ApiKey::DescribeGroups => {
            for _ in 0..w.array(string)? {
                w.string()?;
            }
        }
        ApiKey::ListGroups if version >= 4 => {
            for _ in 0..w.array(string)? {
                w.string()?;
            }
        }
        ApiKey::CreateTopics => {
            for _ in 0..w.array(string + 4 + 2 + array + array + tags)? {
                w.string()?;
                w.skip(4 + 2)?; // partitions, replication factor
                for _ in 0..w.array(4 + array + tags)? {
                    w.skip(4)?;
                    let brokers = w.array(4)?;
                    w.skip(4 * brokers)?;
                    w.tags()?;
                }
                for _ in 0..w.array(string + string + tags)? {
                    w.string()?;
                    w.string()?;
                    w.tags()?;
                }
                w.tags()?;
            }
        }
        ApiKey::DeleteTopics => {
            if version >= 6 {
                for _ in 0..w.array(string + 16 + tags)? {
                    w.string()?;
                    w.skip(16)?;
                    w.tags()?;
                }
            } else {
                for _ in 0..w.array(string)? {
                    w.string()?;
                }
            }
        }
        ApiKey::DescribeConfigs => {
            for _ in 0..w.array(1 + string + array + tags)? {
                w.skip(1)?;
                w.string()?;
                for _ in 0..w.array(string)? {
                    w.string()?;
                }
                w.tags()?;
            }
        }
        // No arrays before its tagged fields, which the decoder reads without pre-allocating.
        _ => {}
    }
    Ok(())
}
