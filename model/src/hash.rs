//! Java's `String.hashCode`, which RocketMQ persists in ConsumeQueue tag codes and IndexFile slots
//! and which clients send in subscription code sets: Skiff must compute it bit for bit.

/// `java.lang.String#hashCode`: `s[0]*31^(n-1) + … + s[n-1]` over UTF-16 code units, wrapping.
pub fn java_string_hash(s: &str) -> i32 {
    let mut h: i32 = 0;
    for unit in s.encode_utf16() {
        h = h.wrapping_mul(31).wrapping_add(i32::from(unit));
    }
    h
}

#[cfg(test)]
mod tests {
    use super::java_string_hash;

    #[test]
    fn matches_java_for_known_strings() {
        // Values printed by `System.out.println("…".hashCode())` on OpenJDK 17.
        assert_eq!(java_string_hash(""), 0);
        assert_eq!(java_string_hash("TagA"), 2598919);
        assert_eq!(java_string_hash("hello"), 99162322);
        assert_eq!(java_string_hash("TopicTest#KEY1"), -1656969516);
        // Non-BMP characters hash as two UTF-16 surrogates.
        assert_eq!(java_string_hash("😀"), 1772899);
        assert_eq!(java_string_hash("中文"), 646394);
    }
}
