//! `whiteRemoteAddress` / `globalWhiteRemoteAddresses` patterns, as Java's
//! `RemoteAddressStrategyFactory` reads them: blank (matches nothing), `*` (everything), one
//! address, a list (`10.0.0.1,10.0.0.2` or `10.0.0.{1,2}`), or an IPv4 range where one of the
//! last three parts is `*` or `a-b` (`192.168.*.*`, `192.168.1.10-20`; parts after it are not
//! compared, as in Java).

use std::collections::HashSet;
use std::net::IpAddr;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AddressRule {
    /// No address (an unset `whiteRemoteAddress`).
    Nothing,
    Everything,
    Set(HashSet<IpAddr>),
    /// The first `prefix.len()` parts equal `prefix`, the next is within `low..=high`.
    V4Range {
        prefix: Vec<u8>,
        low: u8,
        high: u8,
    },
}

impl AddressRule {
    /// Reads a pattern; `Err` is Java's AclException text.
    pub fn parse(pattern: &str) -> Result<AddressRule, String> {
        let p = pattern.trim();
        if p.is_empty() {
            return Ok(AddressRule::Nothing);
        }
        if matches!(p, "*" | "*.*.*.*" | "*:*:*:*:*:*:*:*") {
            return Ok(AddressRule::Everything);
        }
        let bad = || format!("Netaddress examine Exception netaddress is {p}");
        if let Some(open) = p
            .strip_suffix('}')
            .and_then(|s| s.rfind('{').map(|i| (s, i)))
        {
            let (s, i) = open;
            let head = &s[..i];
            if !(head.ends_with('.') || head.ends_with(':')) {
                return Err(format!(
                    "MultipleRemoteAddressStrategy netaddress examine scope Exception netaddress {p}"
                ));
            }
            let set = s[i + 1..]
                .split(',')
                .filter(|x| !x.trim().is_empty())
                .map(|tail| one(&format!("{head}{}", tail.trim())).ok_or_else(bad))
                .collect::<Result<HashSet<_>, _>>()?;
            return Ok(AddressRule::Set(set));
        }
        if p.contains(',') {
            let set = p
                .split(',')
                .filter(|x| !x.trim().is_empty())
                .map(|a| {
                    one(a.trim())
                        .ok_or_else(|| format!("Netaddress examine Exception netaddress is {a}"))
                })
                .collect::<Result<HashSet<_>, _>>()?;
            return Ok(AddressRule::Set(set));
        }
        if p.contains('*') || p.contains('-') {
            return v4_range(p);
        }
        one(p)
            .map(|a| AddressRule::Set(HashSet::from([a])))
            .ok_or_else(bad)
    }

    pub fn matches(&self, peer: IpAddr) -> bool {
        let peer = canonical(peer);
        match self {
            AddressRule::Nothing => false,
            AddressRule::Everything => true,
            AddressRule::Set(set) => set.contains(&peer),
            AddressRule::V4Range { prefix, low, high } => match peer {
                IpAddr::V4(v4) => {
                    let o = v4.octets();
                    o[..prefix.len()] == prefix[..] && (*low..=*high).contains(&o[prefix.len()])
                }
                IpAddr::V6(_) => false,
            },
        }
    }
}

fn one(addr: &str) -> Option<IpAddr> {
    addr.parse::<IpAddr>().ok().map(canonical)
}

/// IPv4-mapped IPv6 peers (`::ffff:10.0.0.1`) compare as IPv4.
fn canonical(a: IpAddr) -> IpAddr {
    match a {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(IpAddr::V6(v6), IpAddr::V4),
        v4 => v4,
    }
}

fn v4_range(p: &str) -> Result<AddressRule, String> {
    let scope = || format!("Netaddress examine scope Exception netaddress is {p}");
    if p.contains(':') {
        return Err(format!(
            "{p}: IPv6 address ranges are not supported by Skiff; list the addresses instead"
        ));
    }
    let parts: Vec<&str> = p.split('.').map(str::trim).collect();
    if parts.len() != 4 {
        return Err(scope());
    }
    for i in 1..4 {
        let (low, high) = match parts[i] {
            "*" => (0, 255),
            part if part.contains('-') => {
                let (a, b) = part.split_once('-').ok_or_else(scope)?;
                let range = || {
                    format!("RangeRemoteAddressStrategy netaddress examine scope Exception value {part} ")
                };
                let (a, b) = (
                    a.parse::<u8>().map_err(|_| range())?,
                    b.parse::<u8>().map_err(|_| range())?,
                );
                if a > b {
                    return Err(format!(
                        "RangeRemoteAddressStrategy netaddress examine scope Exception start is {a} , end is {b}"
                    ));
                }
                (a, b)
            }
            _ => continue,
        };
        let prefix = parts[..i]
            .iter()
            .map(|x| x.parse::<u8>().map_err(|_| scope()))
            .collect::<Result<Vec<_>, _>>()?;
        return Ok(AddressRule::V4Range { prefix, low, high });
    }
    Err(scope())
}

#[cfg(test)]
mod tests {
    use super::*;

    const LOCAL: IpAddr = IpAddr::V4(std::net::Ipv4Addr::LOCALHOST);

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn patterns_match_as_in_java() {
        let r = AddressRule::parse("192.168.0.*").unwrap();
        assert!(r.matches(ip("192.168.0.7")));
        assert!(!r.matches(ip("192.168.1.7")));
        let r = AddressRule::parse("192.168.1.10-20").unwrap();
        assert!(r.matches(ip("192.168.1.15")));
        assert!(!r.matches(ip("192.168.1.21")));
        let r = AddressRule::parse("10.*.1.1").unwrap();
        assert!(
            r.matches(ip("10.200.3.4")),
            "parts after the wildcard are ignored"
        );
        let r = AddressRule::parse("10.0.0.{1,2}").unwrap();
        assert!(r.matches(ip("10.0.0.2")) && !r.matches(ip("10.0.0.3")));
        let r = AddressRule::parse("10.0.0.1, 10.0.0.9").unwrap();
        assert!(r.matches(ip("10.0.0.9")));
        let r = AddressRule::parse("127.0.0.1").unwrap();
        assert!(r.matches(LOCAL));
        assert!(r.matches(ip("::ffff:127.0.0.1")));
        assert!(AddressRule::parse("*").unwrap().matches(ip("::1")));
        assert!(!AddressRule::parse("").unwrap().matches(LOCAL));
        let r = AddressRule::parse("::1").unwrap();
        assert!(r.matches(ip("0:0:0:0:0:0:0:1")));
    }

    #[test]
    fn bad_patterns_are_refused_with_javas_text() {
        for bad in [
            "300.1.1.1",
            "10.0.0.x",
            "10.0.0.5-1",
            "1.2.3",
            "10.0.0.{1,zz}",
            "a:*",
        ] {
            assert!(AddressRule::parse(bad).is_err(), "{bad}");
        }
        assert_eq!(
            AddressRule::parse("hello").unwrap_err(),
            "Netaddress examine Exception netaddress is hello"
        );
    }
}
