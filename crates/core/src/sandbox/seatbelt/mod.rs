//! The Seatbelt profile for `bash` commands on macOS, generated as text: what `sandbox-exec -p`
//! is given. The Codex CLI sandboxes commands on macOS the same way (its base profile, itself
//! modelled on Chromium's, is the public example this one follows), and Claude Code too.
//!
//! The profile is closed by default (`(deny default)`: an operation no rule allows fails with
//! `EPERM`, "Operation not permitted") and then allows, in the harness's terms:
//!
//! | rule | what it gives a command |
//! |---|---|
//! | `process-exec`, `process-fork` | running programs; each inherits the profile |
//! | `signal`, `process-info*` with `(target same-sandbox)` | signalling and inspecting only its own processes: not the harness, not the user's other programs |
//! | `file-read*` | reading every file, as on Linux |
//! | `file-write-data` on [`DEVICES`], `/dev/stdout`, `/dev/stderr`, `/dev/fd/N` | writing the usual character devices and the command's own open streams, in every mode |
//! | `file-write*` under the parameters `WRITABLE_0`, `WRITABLE_1`, … | writing the workspace and the temp folders (`workspace-write` only) |
//! | `sysctl-read` of named system facts (not `kern.procargs2`), `user-preference-read`, `mach-host*`, `ipc-posix-sem`, unix sockets of its own, the user and group lookup services, its own pseudo-terminals | what ordinary programs ask of the system (CPU count, user names, Python's semaphores, `socketpair`) |
//! | IP `network-outbound`, `-inbound`, `-bind`; name resolution; certificate checks (not the keychain) | the network (not with `--no-network`) |
//! | `network-outbound` and `-bind` on any socket path | unix sockets of others (only with `--allow-unix-sockets`) |
//!
//! Paths reach the profile as parameters (`-DWRITABLE_0=/Users/me/project`), never spliced into
//! its text, so no folder name can change the profile. They must be real paths (Seatbelt
//! compares the resolved path: `/tmp` is `/private/tmp`); [`Policy::new`]'s caller resolves them.
//!
//! Denied, as everything is that no rule allows: hard links (`file-link`; tools fall back to a
//! copy, and allowing it by destination would let a link to an outside file be written through),
//! the keychain, other processes' arguments and environment.
//!
//! This module is plain text and compiles everywhere, so its tests run on Linux CI; running the
//! profile needs a Mac (see [`crate::sandbox`]).

use std::ffi::{OsStr, OsString};
use std::path::PathBuf;

use super::{Sandbox, SandboxMode};

/// Where `sandbox-exec` is: only this path, never one found on `PATH`, where a command could
/// have put a program of its own.
pub const SANDBOX_EXEC: &str = "/usr/bin/sandbox-exec";

/// The character devices every sandboxed command may write (macOS has no `/dev/full`;
/// `/dev/dtracehelper` is opened for writing by programs built with DTrace probes, Node among
/// them).
pub const DEVICES: [&str; 5] = ["/dev/null", "/dev/zero", "/dev/random", "/dev/urandom", "/dev/dtracehelper"];

/// The socket through which macOS resolves host names (`mDNSResponder`): allowed whenever the
/// network is, since without it no name resolves; it answers queries and runs nothing.
pub const RESOLVER_SOCKET: &str = "/private/var/run/mDNSResponder";

/// The system services a networked command may look up: configuration and name resolution, and
/// the certificate checks behind TLS (curl, git over https).
///
/// Not `com.apple.SecurityServer`, which Codex's profile allows: it is the keychain's server, and
/// through it a command could read passwords that need no prompt (git's credential helper's
/// among them). Certificate checks go through `trustd`.
const NETWORK_SERVICES: [&str; 6] = [
    "com.apple.SystemConfiguration.configd",
    "com.apple.SystemConfiguration.DNSConfiguration",
    "com.apple.networkd",
    "com.apple.trustd.agent",
    "com.apple.ocspd",
    "com.apple.bsd.dirhelper",
];

/// What one command may do under Seatbelt: the folders it may write (resolved, real paths), the
/// network, unix sockets. Built from the harness's [`Sandbox`] by [`Policy::new`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Policy {
    /// Folders the command may write, with everything beneath them: empty in `read-only`.
    pub writable: Vec<PathBuf>,
    /// IP networking and name resolution (`false` with `--no-network`).
    pub network: bool,
    /// Connecting to and binding unix sockets by path (`--allow-unix-sockets`).
    pub unix_sockets: bool,
}

impl Policy {
    /// The policy for `sandbox`'s settings: `writable` is kept only in `workspace-write` (the
    /// caller passes the workspace and the temp folders, resolved); `None` with `--sandbox off`.
    pub fn new(sandbox: &Sandbox, writable: Vec<PathBuf>) -> Option<Policy> {
        let writable = match sandbox.mode {
            SandboxMode::Off => return None,
            SandboxMode::ReadOnly => Vec::new(),
            SandboxMode::WorkspaceWrite => writable,
        };
        Some(Policy { writable, network: !sandbox.no_network, unix_sockets: sandbox.allow_unix_sockets })
    }

    /// The profile's text, in SBPL (Seatbelt's Scheme dialect). The writable folders appear as
    /// `(param "WRITABLE_N")`, given by [`Policy::arguments`].
    pub fn profile(&self) -> String {
        let mut p = String::from(BASE);
        p.push_str("\n; The usual character devices, in every mode.\n(allow file-write-data\n  (require-all\n    (vnode-type CHARACTER-DEVICE)\n    (require-any");
        for dev in DEVICES {
            p.push_str(&format!("\n      (literal \"{dev}\")"));
        }
        p.push_str(")))\n");
        p.push_str(STANDARD_STREAMS);
        if !self.writable.is_empty() {
            p.push_str("\n; Writing: the workspace and the temp folders, with everything beneath them.\n(allow file-write*");
            for i in 0..self.writable.len() {
                p.push_str(&format!("\n  (subpath (param \"WRITABLE_{i}\"))"));
            }
            p.push_str(")\n");
        }
        if self.network {
            p.push_str(NETWORK);
            p.push_str("(allow mach-lookup");
            for service in NETWORK_SERVICES {
                p.push_str(&format!("\n  (global-name \"{service}\")"));
            }
            p.push_str(")\n");
            p.push_str(&format!(
                "(allow network-outbound (remote unix-socket (path-literal \"{RESOLVER_SOCKET}\")))\n"
            ));
        }
        if self.unix_sockets {
            p.push_str(UNIX_SOCKETS);
        }
        p
    }

    /// `sandbox-exec`'s arguments to run `sh -c command` under this policy: `-p PROFILE`, one
    /// `-DWRITABLE_N=PATH` per writable folder, `--`, then `sh -c command`.
    pub fn arguments(&self, command: &OsStr) -> Vec<OsString> {
        let mut args: Vec<OsString> = vec!["-p".into(), self.profile().into()];
        for (i, dir) in self.writable.iter().enumerate() {
            let mut define = OsString::from(format!("-DWRITABLE_{i}="));
            define.push(dir.as_os_str());
            args.push(define);
        }
        args.extend(["--".into(), "sh".into(), "-c".into(), command.to_owned()]);
        args
    }
}

/// The rules every sandboxed command gets, whatever the mode.
const BASE: &str = r#"(version 1)
; learn-claude-code: the Seatbelt profile for `bash` commands.
; Closed by default: an operation no rule below allows fails with EPERM.
(deny default)

; Running programs; every child inherits this profile.
(allow process-exec)
(allow process-fork)

; Signalling and inspecting only processes inside this sandbox: not the harness, not the
; user's other programs.
(allow signal (target same-sandbox))
(allow process-info* (target same-sandbox))

; Reading every file, as on Linux.
(allow file-read*)

; What ordinary programs ask of the system: settings, the CPU count and other system facts,
; user and group names, Python's semaphores, unix sockets of their own (socketpair, pipes of
; child processes; reaching a socket by its path is a network rule below).
(allow user-preference-read)
(allow mach-host*)
(allow ipc-posix-sem)
(allow system-socket (socket-domain AF_UNIX))
(allow mach-lookup
  (global-name "com.apple.system.opendirectoryd.libinfo")
  (global-name "com.apple.system.opendirectoryd.membership")
  (global-name "com.apple.PowerManagement.control"))
(allow iokit-open
  (iokit-registry-entry-class "RootDomainUserClient"))
(allow file-ioctl (literal "/dev/dtracehelper"))

; System facts by name, not all of sysctl: kern.procargs2 would give the arguments and
; environment of the user's other processes, the harness's among them. The process list
; (kern.proc.*: pids, parents, names) stays readable for ps and pgrep; Python's process pools
; ask for kern.sysv.semmns.
(allow sysctl-read
  (sysctl-name-prefix "hw.")
  (sysctl-name-prefix "machdep.cpu.")
  (sysctl-name-prefix "kern.proc.pid.")
  (sysctl-name-prefix "kern.proc.pgrp.")
  (sysctl-name-prefix "kern.proc.all")
  (sysctl-name-prefix "net.routetable.")
  (sysctl-name "kern.argmax")
  (sysctl-name "kern.boottime")
  (sysctl-name "kern.hostname")
  (sysctl-name "kern.maxfiles")
  (sysctl-name "kern.maxfilesperproc")
  (sysctl-name "kern.maxproc")
  (sysctl-name "kern.ngroups")
  (sysctl-name "kern.osproductversion")
  (sysctl-name "kern.osrelease")
  (sysctl-name "kern.ostype")
  (sysctl-name "kern.osvariant_status")
  (sysctl-name "kern.osversion")
  (sysctl-name "kern.secure_kernel")
  (sysctl-name "kern.sysv.semmns")
  (sysctl-name "kern.usrstack64")
  (sysctl-name "kern.version")
  (sysctl-name "machdep.ptrauth_enabled")
  (sysctl-name "security.mac.lockdown_mode_state")
  (sysctl-name "sysctl.proc_cputype")
  (sysctl-name "sysctl.proc_translated")
  (sysctl-name "vm.loadavg")
  (sysctl-name "vm.swapusage"))
; Java asks its CPU type through a sysctl "write" that only reads.
(allow sysctl-write (sysctl-name "kern.grade_cputype"))

; Pseudo-terminals the command opens for itself (script, expect, a Python pty), not the
; user's terminal.
(allow pseudo-tty)
(allow file-read* file-write* file-ioctl (literal "/dev/ptmx"))
(allow file-read* file-write* file-ioctl
  (require-all
    (regex #"^/dev/ttys[0-9]+$")
    (extension "com.apple.sandbox.pty")))
"#;

/// Writing through `/dev/stdout`, `/dev/stderr` and `/dev/fd/N` (`echo oops >/dev/stderr`): each
/// reopens a descriptor the command already holds, so it reaches nothing new.
const STANDARD_STREAMS: &str = r#"(allow file-write-data
  (literal "/dev/stdout")
  (literal "/dev/stderr")
  (regex #"^/dev/fd/[0-9]+$"))
"#;

/// The network rules (not with `--no-network`): IP sockets in both directions, then the
/// services and the resolver socket that name resolution and TLS need.
const NETWORK: &str = r#"
; The network (not with --no-network): IP sockets, name resolution, certificate checks.
(allow system-socket)
(allow network-outbound (remote ip "*:*"))
(allow network-inbound (local ip "*:*"))
(allow network-bind (local ip "*:*"))
"#;

/// The unix-socket rules (`--allow-unix-sockets`): connecting to and binding any socket path. Without them only the resolver's socket is reachable (with the network).
const UNIX_SOCKETS: &str = r#"
; Unix sockets (--allow-unix-sockets): any socket path; servers outside the sandbox
; (tmux, docker, the ssh agent) become reachable.
(allow network-outbound (remote unix-socket (path-regex #"^/")))
(allow network-bind (local unix-socket (path-regex #"^/")))
"#;

#[cfg(test)]
mod tests;
