//! Reading `extFields` the way Java's header decoding does, with the errors Java answers.

use std::collections::HashMap;
use std::str::FromStr;

use skiff_model::command::{ErrorKind, ErrorReply};

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
