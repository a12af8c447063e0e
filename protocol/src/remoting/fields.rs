//! Reading `extFields` the way Java's header decoding does, with the errors Java answers.

use std::collections::HashMap;
use std::str::FromStr;

use skiff_model::command::{ErrorKind, ErrorReply};

use super::command::RemotingCommand;

/// Typed access to a request's custom header fields.
pub(super) struct Fields<'a>(pub &'a HashMap<String, String>);

/// Java's answer to a request missing a `@CFNotNull` header field.
pub(super) fn missing(name: &str) -> ErrorReply {
    system_error(format!("the custom field <{name}> is null"))
}

pub(super) fn system_error(message: impl Into<String>) -> ErrorReply {
    ErrorReply {
        kind: ErrorKind::SystemError,
        message: message.into(),
    }
}

impl Fields<'_> {
    /// A field as sent; `None` if absent.
    pub fn raw(&self, name: &str) -> Option<&str> {
        self.0.get(name).map(String::as_str)
    }

    /// An optional field; Go sends `""` for fields it leaves unset, so empty means absent.
    pub fn opt(&self, name: &str) -> Option<&str> {
        self.raw(name).filter(|v| !v.is_empty())
    }

    pub fn opt_string(&self, name: &str) -> Option<String> {
        self.opt(name).map(str::to_string)
    }

    /// A required string field (an empty value is still a value).
    pub fn string(&self, name: &str) -> Result<String, ErrorReply> {
        self.raw(name)
            .map(str::to_string)
            .ok_or_else(|| missing(name))
    }

    /// A required number.
    pub fn num<T: FromStr>(&self, name: &str) -> Result<T, ErrorReply> {
        let raw = self.raw(name).ok_or_else(|| missing(name))?;
        parse(name, raw)
    }

    /// An optional number; absent or empty is `None`, anything else must parse.
    pub fn opt_num<T: FromStr>(&self, name: &str) -> Result<Option<T>, ErrorReply> {
        self.opt(name).map(|raw| parse(name, raw)).transpose()
    }

    /// An optional boolean with Java's `Boolean.parseBoolean` rule: only "true" (any case) is true.
    pub fn opt_bool(&self, name: &str) -> Option<bool> {
        self.opt(name).map(|v| v.eq_ignore_ascii_case("true"))
    }
}

fn parse<T: FromStr>(name: &str, raw: &str) -> Result<T, ErrorReply> {
    raw.parse().map_err(|_| {
        system_error(format!(
            "the custom field <{name}> is invalid: For input string: \"{raw}\""
        ))
    })
}

/// Writing fields: numbers and booleans become their Java text.
pub(super) struct FieldsOut<'a>(pub &'a mut HashMap<String, String>);

impl FieldsOut<'_> {
    pub fn put(&mut self, name: &str, value: impl ToString) -> &mut Self {
        self.0.insert(name.to_string(), value.to_string());
        self
    }

    pub fn put_opt(&mut self, name: &str, value: Option<impl ToString>) -> &mut Self {
        if let Some(value) = value {
            self.put(name, value);
        }
        self
    }
}

/// How one header field of a request reads and writes: the kinds the request table
/// (`request.rs`) gives each field, after Java's header classes.
pub(super) trait Field<T> {
    /// The value of field `name` (`""` for kinds that are not one field) of `cmd`.
    fn read(cmd: &RemotingCommand, name: &'static str) -> Result<T, ErrorReply>;
    fn write(value: &T, cmd: &mut RemotingCommand, name: &'static str);
}

/// Field kinds.
pub(super) mod kind {
    use std::str::FromStr;

    use bytes::Bytes;
    use skiff_model::command::{BoundaryType, ErrorReply, QueueRef};
    use skiff_model::consumer::MessageQueue;
    use skiff_model::message::sys_flag;
    use skiff_model::transaction::TransactionResolution;

    use super::{system_error, Field, Fields, FieldsOut};
    use crate::remoting::body;
    use crate::remoting::command::{Body, RemotingCommand};

    fn fields(cmd: &RemotingCommand) -> Fields<'_> {
        Fields(&cmd.ext_fields)
    }

    fn out(cmd: &mut RemotingCommand) -> FieldsOut<'_> {
        FieldsOut(&mut cmd.ext_fields)
    }

    /// A required string (`@CFNotNull`).
    pub struct Text;
    impl Field<String> for Text {
        fn read(cmd: &RemotingCommand, name: &'static str) -> Result<String, ErrorReply> {
            fields(cmd).string(name)
        }
        fn write(value: &String, cmd: &mut RemotingCommand, name: &'static str) {
            out(cmd).put(name, value);
        }
    }

    /// A string Java does not check: absent reads as empty, and it is always written.
    pub struct TextOrEmpty;
    impl Field<String> for TextOrEmpty {
        fn read(cmd: &RemotingCommand, name: &'static str) -> Result<String, ErrorReply> {
            Ok(fields(cmd).opt_string(name).unwrap_or_default())
        }
        fn write(value: &String, cmd: &mut RemotingCommand, name: &'static str) {
            out(cmd).put(name, value);
        }
    }

    /// An optional string, written only when set.
    pub struct OptText;
    impl Field<Option<String>> for OptText {
        fn read(cmd: &RemotingCommand, name: &'static str) -> Result<Option<String>, ErrorReply> {
            Ok(fields(cmd).opt_string(name))
        }
        fn write(value: &Option<String>, cmd: &mut RemotingCommand, name: &'static str) {
            out(cmd).put_opt(name, value.as_ref());
        }
    }

    /// A required number.
    pub struct Int;
    impl<T: FromStr + ToString> Field<T> for Int {
        fn read(cmd: &RemotingCommand, name: &'static str) -> Result<T, ErrorReply> {
            fields(cmd).num(name)
        }
        fn write(value: &T, cmd: &mut RemotingCommand, name: &'static str) {
            out(cmd).put(name, value.to_string());
        }
    }

    /// An optional number, written only when set.
    pub struct OptInt;
    impl<T: FromStr + ToString> Field<Option<T>> for OptInt {
        fn read(cmd: &RemotingCommand, name: &'static str) -> Result<Option<T>, ErrorReply> {
            fields(cmd).opt_num(name)
        }
        fn write(value: &Option<T>, cmd: &mut RemotingCommand, name: &'static str) {
            out(cmd).put_opt(name, value.as_ref().map(ToString::to_string));
        }
    }

    /// A boolean that is false unless sent as "true"; always written.
    pub struct Yes;
    impl Field<bool> for Yes {
        fn read(cmd: &RemotingCommand, name: &'static str) -> Result<bool, ErrorReply> {
            Ok(fields(cmd).opt_bool(name) == Some(true))
        }
        fn write(value: &bool, cmd: &mut RemotingCommand, name: &'static str) {
            out(cmd).put(name, value);
        }
    }

    /// A boolean that is true unless sent as "false"; written only when false.
    pub struct NotNo;
    impl Field<bool> for NotNo {
        fn read(cmd: &RemotingCommand, name: &'static str) -> Result<bool, ErrorReply> {
            Ok(fields(cmd).opt_bool(name) != Some(false))
        }
        fn write(value: &bool, cmd: &mut RemotingCommand, name: &'static str) {
            if !value {
                out(cmd).put(name, false);
            }
        }
    }

    /// A queue: `topic`, `queueId`, and `lo` (false: a static topic's physical queue).
    pub struct Queue;
    impl Field<QueueRef> for Queue {
        fn read(cmd: &RemotingCommand, _: &'static str) -> Result<QueueRef, ErrorReply> {
            let f = fields(cmd);
            Ok(QueueRef {
                topic: f.string("topic")?,
                queue_id: f.num("queueId")?,
                physical: f.opt_bool("lo") == Some(false),
            })
        }
        fn write(queue: &QueueRef, cmd: &mut RemotingCommand, _: &'static str) {
            let mut out = out(cmd);
            out.put("topic", &queue.topic)
                .put("queueId", queue.queue_id);
            if queue.physical {
                out.put("lo", false);
            }
        }
    }

    /// `BoundaryType.getType`: UPPER in any case, anything else LOWER.
    pub struct Boundary;
    impl Field<BoundaryType> for Boundary {
        fn read(cmd: &RemotingCommand, name: &'static str) -> Result<BoundaryType, ErrorReply> {
            Ok(match fields(cmd).opt(name) {
                Some(b) if b.eq_ignore_ascii_case("upper") => BoundaryType::Upper,
                _ => BoundaryType::Lower,
            })
        }
        fn write(value: &BoundaryType, cmd: &mut RemotingCommand, name: &'static str) {
            let text = match value {
                BoundaryType::Lower => "LOWER",
                BoundaryType::Upper => "UPPER",
            };
            out(cmd).put(name, text);
        }
    }

    /// `commitOrRollback` with `EndTransactionRequestHeader.checkFields`' rule.
    pub struct Resolution;
    impl Field<TransactionResolution> for Resolution {
        fn read(
            cmd: &RemotingCommand,
            name: &'static str,
        ) -> Result<TransactionResolution, ErrorReply> {
            match fields(cmd).num::<i32>(name)? {
                sys_flag::TRANSACTION_NOT_TYPE => Ok(TransactionResolution::Unknown),
                sys_flag::TRANSACTION_COMMIT_TYPE => Ok(TransactionResolution::Commit),
                sys_flag::TRANSACTION_ROLLBACK_TYPE => Ok(TransactionResolution::Rollback),
                _ => Err(system_error("commitOrRollback field wrong")),
            }
        }
        fn write(value: &TransactionResolution, cmd: &mut RemotingCommand, name: &'static str) {
            let flag = match value {
                TransactionResolution::Unknown => sys_flag::TRANSACTION_NOT_TYPE,
                TransactionResolution::Commit => sys_flag::TRANSACTION_COMMIT_TYPE,
                TransactionResolution::Rollback => sys_flag::TRANSACTION_ROLLBACK_TYPE,
            };
            out(cmd).put(name, flag);
        }
    }

    /// RESET_CONSUMER_CLIENT_OFFSET's `ResetOffsetBody`, and the header fields
    /// `Broker2Client.resetOffset` fills besides (`isForce` false, `queueId` -1).
    pub struct ResetOffsets;
    impl Field<Vec<(MessageQueue, i64)>> for ResetOffsets {
        fn read(
            cmd: &RemotingCommand,
            _: &'static str,
        ) -> Result<Vec<(MessageQueue, i64)>, ErrorReply> {
            body::parse_reset_offsets(&cmd.body.to_bytes())
                .map_err(|e| system_error(format!("malformed ResetOffsetBody: {e}")))
        }
        fn write(offsets: &Vec<(MessageQueue, i64)>, cmd: &mut RemotingCommand, _: &'static str) {
            out(cmd).put("isForce", false).put("queueId", -1);
            cmd.body = Body::from(body::reset_offset_json(offsets).into_bytes());
        }
    }

    /// The body as sent.
    pub struct RawBody;
    impl Field<Bytes> for RawBody {
        fn read(cmd: &RemotingCommand, _: &'static str) -> Result<Bytes, ErrorReply> {
            Ok(cmd.body.to_bytes())
        }
        fn write(value: &Bytes, cmd: &mut RemotingCommand, _: &'static str) {
            cmd.body = Body::from(value.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn java_rules() {
        let map: HashMap<String, String> = [("a", "1"), ("b", ""), ("c", "TRUE"), ("d", "x")]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let fields = Fields(&map);
        assert_eq!(fields.num::<i32>("a"), Ok(1));
        assert_eq!(fields.opt("b"), None);
        assert_eq!(fields.string("b"), Ok(String::new()));
        assert_eq!(fields.opt_bool("c"), Some(true));
        assert_eq!(fields.opt_bool("d"), Some(false));
        assert_eq!(
            fields.num::<i32>("z").unwrap_err().message,
            "the custom field <z> is null"
        );
        assert_eq!(
            fields.num::<i32>("d").unwrap_err().kind,
            ErrorKind::SystemError
        );
        assert_eq!(fields.opt_num::<i64>("b"), Ok(None));
    }
}
