//! The account the server runs as: ourselves, or — when we are root, which `initdb` and
//! `postgres` refuse — the `postgres` system user (Debian's package creates it), else
//! `nobody`. Looked up in `/etc/passwd` (no NSS needed for system accounts).

/// A uid/gid pair to run the server as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunAs {
    pub uid: u32,
    pub gid: u32,
}

/// `None` when we are not root (the server runs as us), else the unprivileged account.
pub fn unprivileged() -> Option<RunAs> {
    // SAFETY: geteuid has no preconditions and cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        return None;
    }
    let passwd = std::fs::read_to_string("/etc/passwd").unwrap_or_default();
    let found = lookup(&passwd, "postgres").or_else(|| lookup(&passwd, "nobody"));
    Some(found.unwrap_or(RunAs {
        uid: 65534,
        gid: 65534,
    }))
}

fn lookup(passwd: &str, name: &str) -> Option<RunAs> {
    passwd.lines().find_map(|line| {
        let mut f = line.split(':');
        if f.next()? != name {
            return None;
        }
        let uid = f.nth(1)?.parse().ok()?;
        let gid = f.next()?.parse().ok()?;
        // A root-equivalent account would be refused by initdb anyway.
        (uid != 0).then_some(RunAs { uid, gid })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn looks_up_uid_and_gid() {
        let passwd = "root:x:0:0:root:/root:/bin/bash\npostgres:x:101:104:PG:/var/lib/postgresql:/bin/bash\n";
        assert_eq!(
            lookup(passwd, "postgres"),
            Some(RunAs { uid: 101, gid: 104 })
        );
        assert_eq!(lookup(passwd, "nobody"), None);
        assert_eq!(lookup(passwd, "root"), None);
    }
}
