//! `blacklistIPs` ranges (k6's `--blacklist-ip`): CIDR blocks, IPv4 or IPv6.

use std::net::IpAddr;

/// One CIDR block, e.g. `10.0.0.0/8` or `fd00::/8` (a bare address is a single host).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IpNet {
    addr: IpAddr,
    prefix: u8,
    text: String,
}

fn bits(ip: IpAddr) -> (u128, u8) {
    match ip {
        IpAddr::V4(a) => (u32::from(a) as u128, 32),
        IpAddr::V6(a) => (u128::from(a), 128),
    }
}

impl IpNet {
    pub fn parse(s: &str) -> Result<IpNet, String> {
        let bad = || format!("'{s}' is not an IP range (expected CIDR such as 10.0.0.0/8)");
        let (ip, prefix) = s.trim().split_once('/').unwrap_or((s.trim(), ""));
        let addr: IpAddr = ip.parse().map_err(|_| bad())?;
        let width = bits(addr).1;
        let prefix = if prefix.is_empty() {
            width
        } else {
            prefix
                .parse::<u8>()
                .ok()
                .filter(|p| *p <= width)
                .ok_or_else(bad)?
        };
        Ok(IpNet {
            addr,
            prefix,
            text: s.trim().to_string(),
        })
    }

    pub fn contains(&self, ip: IpAddr) -> bool {
        let ((net, w1), (ip, w2)) = (bits(self.addr), bits(ip.to_canonical()));
        if w1 != w2 {
            return false;
        }
        let shift = w1 - self.prefix;
        shift >= w1 || (net >> shift) == (ip >> shift)
    }
}

impl std::fmt::Display for IpNet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

#[cfg(test)]
mod tests {
    use super::IpNet;

    #[test]
    fn cidr_blocks_contain_their_addresses() {
        let n = IpNet::parse("10.0.0.0/8").unwrap();
        assert!(n.contains("10.1.2.3".parse().unwrap()));
        assert!(!n.contains("11.0.0.1".parse().unwrap()));
        assert!(!n.contains("::1".parse().unwrap()));
        assert!(IpNet::parse("0.0.0.0/0")
            .unwrap()
            .contains("8.8.8.8".parse().unwrap()));
        assert!(IpNet::parse("127.0.0.1")
            .unwrap()
            .contains("127.0.0.1".parse().unwrap()));
        assert!(IpNet::parse("fd00::/8")
            .unwrap()
            .contains("fd12::1".parse().unwrap()));
        for bad in ["10.0.0.0/33", "nope", "1.2.3.4/x", ""] {
            assert!(IpNet::parse(bad).is_err(), "{bad}");
        }
    }
}
