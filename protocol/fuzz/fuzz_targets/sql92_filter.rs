//! Compiles arbitrary text as a SQL92 message selector and evaluates whatever compiles against
//! properties taken from the input's tail: neither may panic, overflow the stack or run away.
//!
//! Input layout: `[split]` then the expression text up to `split`, then the value of the
//! properties `a`, `b` and `TAGS` (the same text for all three).
#![no_main]

use libfuzzer_sys::fuzz_target;
use skiff_model::filter::Selector;

fuzz_target!(|data: &[u8]| {
    let [split, rest @ ..] = data else {
        return;
    };
    let split = usize::from(*split).min(rest.len());
    let (sql, value) = rest.split_at(split);
    let sql = String::from_utf8_lossy(sql);
    let value = String::from_utf8_lossy(value);
    // Fuzz threads have small stacks, as tokio workers do: the parser bounds its own depth.
    if let Ok(selector) = Selector::parse(&sql) {
        let _ = selector.matches_properties(|name| match name {
            "a" | "b" | "TAGS" => Some(value.as_ref()),
            _ => None,
        });
    }
});
