//! The deny list: commands no chapter's `bash` runs, whatever the user answers (course §1, §3).
//! A leaf: it reads the command text on its own, without the permission tokeniser,
//! so s02's `bash` (`Error: Dangerous command blocked`) and s05's permission check
//! (`Permission denied by deny list`) refuse exactly the same commands.
//!
//! | entry | matched as |
//! |---|---|
//! | `rm -rf /`, `dd if=` | substrings, as in the course |
//! | `sudo`, `shutdown`, `reboot`, `poweroff`, `halt`, `mkfs…` | a word (quotes and backslashes removed first, so `"shut"down` is still `shutdown`; a path's last part counts: `/sbin/halt`) |
//! | `init 0`, `init 6`, `telinit 0`, `telinit 6` | the word followed by the runlevel |
//! | `systemctl poweroff`, `reboot`, `halt`, `kexec` | `systemctl`, options skipped, then the verb |
//! | a write to a device | a redirection (`>`, `>>`, `>|`, `&>`, `>&`) or `dd of=` naming `/dev/…` other than `/dev/null`, `/dev/stdout`, `/dev/stderr`, `/dev/tty`, `/dev/fd/N`; and any mention of a block device (`/dev/sd*`, `nvme*`, `mmcblk*`, `loop*`, `dm-*`, `/dev/disk/…`, `/dev/mapper/…`, …) |
//!
//! Words are matched anywhere in the command, as the course's substrings were: `echo sudo` is
//! refused too. The list is a floor, not a sandbox; the permission check and the OS sandbox do
//! the rest.

/// The entries, as [`deny_list_match`] names them.
pub const DENY_LIST: &[&str] = &[
    "rm -rf /",
    "dd if=",
    "sudo",
    "shutdown",
    "reboot",
    "poweroff",
    "halt",
    "mkfs",
    "init 0|6",
    "telinit 0|6",
    "systemctl poweroff|reboot|halt|kexec",
    "write to a device",
];

/// Words refused wherever they stand (compared after the directory is stripped).
const WORDS: &[&str] = &["sudo", "shutdown", "reboot", "poweroff", "halt"];

/// Device files that are fine to write to.
const HARMLESS_DEVICES: &[&str] = &["null", "stdout", "stderr", "tty"];

/// Prefixes of block-device names under `/dev/`.
const BLOCK_DEVICES: &[&str] = &[
    "sd", "hd", "vd", "xvd", "nvme", "mmcblk", "loop", "dm-", "md", "sr", "ram", "zram", "nbd", "disk/",
    "mapper/",
];

/// The [`DENY_LIST`] entry that `command` matches, if any (see the module table).
pub fn deny_list_match(command: &str) -> Option<&'static str> {
    for phrase in ["rm -rf /", "dd if="] {
        if command.contains(phrase) {
            return Some(phrase);
        }
    }
    let plain: String = command.chars().filter(|c| !matches!(c, '\'' | '"' | '\\')).collect();
    let words: Vec<&str> = plain
        .split(|c: char| !(c.is_alphanumeric() || "_-./=+:@%~^".contains(c)))
        .filter(|w| !w.is_empty())
        .collect();
    for (i, word) in words.iter().enumerate() {
        let name = word.rsplit('/').next().unwrap_or(word);
        if let Some(entry) = WORDS.iter().copied().find(|w| *w == name) {
            return Some(entry);
        }
        if name.starts_with("mkfs") {
            return Some("mkfs");
        }
        let next = words.get(i + 1).copied();
        if matches!(name, "init" | "telinit") && matches!(next, Some("0" | "6")) {
            return Some(if name == "init" { "init 0|6" } else { "telinit 0|6" });
        }
        if name == "systemctl" {
            let verb = words.get(i + 1..).unwrap_or_default().iter().find(|w| !w.starts_with('-'));
            if matches!(verb.copied(), Some("poweroff" | "reboot" | "halt" | "kexec")) {
                return Some("systemctl poweroff|reboot|halt|kexec");
            }
        }
    }
    device_write(&plain).then_some("write to a device")
}

/// `true` when `plain` (quotes removed) writes to a device other than the harmless ones, or
/// names a block device at all.
fn device_write(plain: &str) -> bool {
    let mut rest = plain;
    while let Some(at) = rest.find("/dev/") {
        let before = rest.get(..at).unwrap_or_default().trim_end();
        let name: String = rest
            .get(at + 5..)
            .unwrap_or_default()
            .chars()
            .take_while(|c| !c.is_whitespace() && !";&|()<>`$".contains(*c))
            .collect();
        let written = before.ends_with('>') || before.ends_with(">&") || before.ends_with("of=");
        let harmless = HARMLESS_DEVICES.contains(&name.as_str())
            || name
                .strip_prefix("fd/")
                .is_some_and(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()));
        if BLOCK_DEVICES.iter().any(|b| name.starts_with(b)) || (written && !harmless) {
            return true;
        }
        rest = rest.get(at + 5..).unwrap_or_default();
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_and_harmless_neighbours() {
        let rows: &[(&str, Option<&str>)] = &[
            ("rm -rf /", Some("rm -rf /")),
            ("dd if=/dev/zero of=x", Some("dd if=")),
            ("sudo ls", Some("sudo")),
            ("echo sudo", Some("sudo")),
            ("\"shut\"down -h now", Some("shutdown")),
            ("/sbin/halt -f", Some("halt")),
            ("poweroff", Some("poweroff")),
            ("mkfs.ext4 x", Some("mkfs")),
            ("init 0", Some("init 0|6")),
            ("telinit 6", Some("telinit 0|6")),
            ("systemctl --force poweroff", Some("systemctl poweroff|reboot|halt|kexec")),
            ("systemctl kexec", Some("systemctl poweroff|reboot|halt|kexec")),
            ("echo x > /dev/sda", Some("write to a device")),
            ("cat x >/dev/mem", Some("write to a device")),
            ("dd of=/dev/nvme0n1", Some("write to a device")),
            ("tee /dev/sdb < x", Some("write to a device")),
            ("ls > /dev/null 2>&1", None),
            ("ls 2>/dev/null", None),
            ("grep -r x . > /dev/null", None),
            ("echo hi >/dev/stderr; echo >&2 x; echo > /dev/fd/2", None),
            ("cat /dev/urandom | head -c 4", None),
            ("git init", None),
            ("systemctl status", None),
            ("pseudocode", None),
            ("asphalt", None),
            ("init", None),
        ];
        for (command, entry) in rows {
            assert_eq!(deny_list_match(command), *entry, "{command}");
        }
    }
}
