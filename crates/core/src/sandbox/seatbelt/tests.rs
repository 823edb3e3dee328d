//! The Seatbelt profile, locked: what each mode allows and what none allows. These run on every
//! system; `sandbox-exec` itself only on a Mac.

use std::ffi::OsStr;
use std::path::PathBuf;

use super::*;
use crate::sandbox::{Sandbox, SandboxMode};

fn sandbox(mode: SandboxMode, no_network: bool, allow_unix_sockets: bool) -> Sandbox {
    Sandbox { mode, no_network, allow_unix_sockets }
}

fn folders() -> Vec<PathBuf> {
    vec![PathBuf::from("/Users/me/project"), PathBuf::from("/private/tmp")]
}

fn profile_of(mode: SandboxMode, no_network: bool, allow_unix_sockets: bool) -> String {
    Policy::new(&sandbox(mode, no_network, allow_unix_sockets), folders())
        .map(|p| p.profile())
        .unwrap_or_default()
}

/// The profile's rules, each a top-level form, with comments and line breaks taken out:
/// `(allow file-write* (subpath (param "WRITABLE_0")))`. Fails on unbalanced parentheses or
/// an unterminated string, which `sandbox-exec` would refuse.
fn parse(profile: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let (mut depth, mut in_string, mut in_comment, mut escaped) = (0i32, false, false, false);
    for c in profile.chars() {
        if in_comment {
            if c == '\n' {
                in_comment = false;
            }
            continue;
        }
        if in_string {
            current.push(c);
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                in_string = false;
            }
            continue;
        }
        match c {
            ';' => in_comment = true,
            '"' => {
                in_string = true;
                current.push(c);
            }
            '(' => {
                depth += 1;
                current.push(c);
            }
            ')' => {
                depth -= 1;
                assert!(depth >= 0, "a `)` closes nothing in:\n{profile}");
                current.push(c);
                if depth == 0 {
                    out.push(std::mem::take(&mut current));
                }
            }
            c if c.is_whitespace() => {
                if depth > 0 && !current.ends_with([' ', '(']) {
                    current.push(' ');
                }
            }
            c => {
                assert!(depth > 0, "{c:?} outside any form in:\n{profile}");
                current.push(c);
            }
        }
    }
    assert!(!in_string && depth == 0, "unbalanced profile:\n{profile}");
    out.into_iter().map(|f| f.replace(" )", ")")).collect()
}

fn allows<'a>(forms: &'a [String], operation: &str) -> Vec<&'a String> {
    let prefix = format!("(allow {operation}");
    forms.iter().filter(|f| f.starts_with(&prefix)).collect()
}

#[test]
fn every_profile_is_well_formed_and_closed_by_default() {
    for mode in [SandboxMode::ReadOnly, SandboxMode::WorkspaceWrite] {
        for no_network in [false, true] {
            for unix in [false, true] {
                let profile = profile_of(mode, no_network, unix);
                let forms = parse(&profile);
                assert_eq!(forms[0], "(version 1)");
                assert_eq!(forms[1], "(deny default)", "closed by default, before any allow");
                assert!(!forms.iter().any(|f| f.starts_with("(allow default")), "{profile}");
                // Signals and process information reach only the sandbox's own processes.
                assert_eq!(allows(&forms, "signal"), ["(allow signal (target same-sandbox))"]);
                assert_eq!(allows(&forms, "process-info"), ["(allow process-info* (target same-sandbox))"]);
                // No rule names a path in the profile's text but the fixed system ones: the
                // writable folders come as parameters only.
                assert!(!profile.contains("/Users/me"), "{profile}");
                // System facts by name only: no other process's arguments or environment.
                assert!(
                    allows(&forms, "sysctl-read").iter().all(|f| f.contains("(sysctl-name")),
                    "{forms:#?}"
                );
                assert!(!forms.iter().any(|f| f.contains("procargs")), "{profile}");
                // Not the keychain's server, nor any write to a file by a rule other than the
                // parameters', the devices and the streams.
                assert!(!profile.contains("SecurityServer"), "{profile}");
                assert!(!forms.iter().any(|f| f.starts_with("(allow file-link")), "{profile}");
            }
        }
    }
}

#[test]
fn read_only_writes_nothing_but_the_devices() {
    let forms = parse(&profile_of(SandboxMode::ReadOnly, false, false));
    assert!(allows(&forms, "file-write*").is_empty(), "{forms:#?}");
    let data = allows(&forms, "file-write-data");
    assert_eq!(data.len(), 2, "{data:#?}");
    assert!(data[0].contains("(vnode-type CHARACTER-DEVICE)"), "{}", data[0]);
    for dev in DEVICES {
        assert!(data[0].contains(&format!("(literal \"{dev}\")")), "{dev} in {}", data[0]);
    }
    // The command's own streams by name, and nothing else under /dev/fd.
    assert_eq!(
        data[1].as_str(),
        "(allow file-write-data (literal \"/dev/stdout\") (literal \"/dev/stderr\") (regex #\"^/dev/fd/[0-9]+$\"))"
    );
    // Only the pseudo-terminals the command makes itself, not the user's terminal.
    let pty = forms.iter().find(|f| f.contains("ttys")).map(String::as_str).unwrap_or_default();
    assert!(pty.contains("(extension \"com.apple.sandbox.pty\")"), "{pty}");
}

#[test]
fn workspace_write_writes_exactly_the_folders_given() {
    let policy = Policy::new(&sandbox(SandboxMode::WorkspaceWrite, false, false), folders());
    let forms = parse(&policy.map(|p| p.profile()).unwrap_or_default());
    assert_eq!(
        allows(&forms, "file-write*"),
        ["(allow file-write* (subpath (param \"WRITABLE_0\")) (subpath (param \"WRITABLE_1\")))"]
    );
    // Read-only mode drops the folders even when the caller passes them.
    let policy = Policy::new(&sandbox(SandboxMode::ReadOnly, false, false), folders());
    assert_eq!(policy.map(|p| p.writable), Some(vec![]));
    assert_eq!(Policy::new(&sandbox(SandboxMode::Off, false, false), folders()), None);
}

#[test]
fn the_network_is_ip_and_name_resolution_and_off_with_no_network() {
    let forms = parse(&profile_of(SandboxMode::WorkspaceWrite, false, false));
    assert_eq!(
        allows(&forms, "network-outbound"),
        [
            "(allow network-outbound (remote ip \"*:*\"))",
            "(allow network-outbound (remote unix-socket (path-literal \"/private/var/run/mDNSResponder\")))"
        ]
    );
    assert_eq!(allows(&forms, "network-bind"), ["(allow network-bind (local ip \"*:*\"))"]);
    assert_eq!(allows(&forms, "network-inbound"), ["(allow network-inbound (local ip \"*:*\"))"]);
    assert!(forms.iter().any(|f| f.contains("com.apple.trustd.agent")), "TLS checks need trustd");

    let off = parse(&profile_of(SandboxMode::WorkspaceWrite, true, false));
    assert!(!off.iter().any(|f| f.contains("network")), "{off:#?}");
    assert_eq!(allows(&off, "system-socket"), ["(allow system-socket (socket-domain AF_UNIX))"]);
}

#[test]
fn unix_sockets_only_with_allow_unix_sockets() {
    let any_path = "(path-regex #\"^/\")";
    let default = parse(&profile_of(SandboxMode::WorkspaceWrite, false, false));
    assert!(!default.iter().any(|f| f.contains(any_path)), "{default:#?}");
    let allowed = parse(&profile_of(SandboxMode::WorkspaceWrite, false, true));
    assert!(allows(&allowed, "network-outbound").iter().any(|f| f.contains(any_path)), "{allowed:#?}");
    assert!(allows(&allowed, "network-bind").iter().any(|f| f.contains(any_path)), "{allowed:#?}");
    // Unix sockets without the network: the socket rules alone, no IP.
    let unix_only = parse(&profile_of(SandboxMode::WorkspaceWrite, true, true));
    assert_eq!(
        allows(&unix_only, "network"),
        [
            "(allow network-outbound (remote unix-socket (path-regex #\"^/\")))",
            "(allow network-bind (local unix-socket (path-regex #\"^/\")))"
        ]
    );
    // Sockets of its own, in every profile; IP sockets only with the network.
    assert_eq!(allows(&unix_only, "system-socket"), ["(allow system-socket (socket-domain AF_UNIX))"]);
    assert_eq!(
        allows(&default, "system-socket"),
        ["(allow system-socket (socket-domain AF_UNIX))", "(allow system-socket)"]
    );
}

#[test]
fn arguments_pass_the_folders_as_parameters_and_the_command_last() {
    let policy = Policy {
        writable: vec![PathBuf::from("/Users/me/my \"project\" (1)"), PathBuf::from("/private/tmp")],
        network: false,
        unix_sockets: false,
    };
    let args = policy.arguments(OsStr::new("echo hi; rm -rf x"));
    let args: Vec<&str> = args.iter().map(|a| a.to_str().unwrap_or("<not UTF-8>")).collect();
    assert_eq!(args[0], "-p");
    assert_eq!(args[1], policy.profile());
    assert_eq!(
        &args[2..],
        [
            "-DWRITABLE_0=/Users/me/my \"project\" (1)",
            "-DWRITABLE_1=/private/tmp",
            "--",
            "sh",
            "-c",
            "echo hi; rm -rf x"
        ]
    );
    // A folder's name never reaches the profile's text, whatever characters it has.
    assert!(!args[1].contains("project"));
}

#[test]
fn the_workspace_write_profile_as_sent() {
    insta::assert_snapshot!(profile_of(SandboxMode::WorkspaceWrite, false, false));
}
