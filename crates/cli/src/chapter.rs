//! The generic chapter entry point: a chapter's whole `main` is one call.
//!
//! ```text
//! fn main() -> ExitCode {
//!     chapter::main(&CHAPTER, |setup| Harness { system, tools, extensions, commands })
//! }
//! ```
//!
//! [`main`] builds the command line from [`CommonArgs`] (every chapter's flags) and the chapter's
//! name and `about` line, then hands over to [`cli::run`]: `--demo`, `-p` or the REPL.
//! [`main_with`] adds a chapter's own flags, such as [`ApprovalArgs`] (`--yes`/`--no`) in the
//! chapters with the permission hook. So a chapter's `main.rs` holds only what it teaches: its
//! SYSTEM prompt, its dispatch map, its extensions, its REPL commands and its demo.

use std::process::ExitCode;

use clap::{Args, Command, FromArgMatches};

use agent_core::approve::{Approver, GatedApprover, ScriptedApprover};
use agent_core::dispatch::DispatchMap;
use agent_core::extension::Shared;
use agent_core::hooks::{self, HookRegistry, HookSet};
use agent_core::permission::{SessionApprover, Source};
use agent_core::tools;

pub use crate::approve::ApprovalArgs;
use crate::cli::{self};
pub use crate::cli::{
    AgentSettings, Banner, Chapter, CommonArgs, Composed, Demo, DemoSession, ENV_HELP, ErrorText, Harness,
    IntoComposed, Setup,
};

/// A chapter with no flags of its own.
#[derive(Debug, Clone, Copy, Default, Args)]
pub struct NoArgs {}

/// Runs the chapter `chapter`: parses the common flags (exiting with clap's message and code 2
/// on bad ones, 0 on `--help`/`--version`), then `--demo`, `-p` or the REPL with the harness that
/// `build` composes. Returns the process exit code (see [`cli`]).
pub fn main<H: IntoComposed>(chapter: &Chapter, build: impl FnOnce(&Setup) -> H) -> ExitCode {
    main_with(chapter, |setup, _: &NoArgs| build(setup))
}

/// [`main`] for a chapter with flags of its own, `A` (flattened next to [`CommonArgs`]); `build`
/// receives them parsed.
pub fn main_with<A: Args + FromArgMatches, H: IntoComposed>(
    chapter: &Chapter,
    build: impl FnOnce(&Setup, &A) -> H,
) -> ExitCode {
    let (common, extra) = parse::<A>(chapter);
    cli::run(chapter, &common, |setup| build(setup, &extra))
}

/// Parses the command line as [`main_with`] does (exiting with clap's message and code 2 on bad
/// flags, 0 on `--help`/`--version`), for a chapter that may do something else than run the
/// agent (s16's `demo` and `resume` subcommands) before it calls [`cli::run`].
pub fn parse<A: Args + FromArgMatches>(chapter: &Chapter) -> (CommonArgs, A) {
    let matches = command::<A>(chapter).get_matches();
    let parsed = CommonArgs::from_arg_matches(&matches).and_then(|c| Ok((c, A::from_arg_matches(&matches)?)));
    match parsed {
        Ok(p) => p,
        Err(e) => e.exit(),
    }
}

/// The chapter's command line: its name, `about` line, the common flags, `A`'s flags, and the
/// environment help.
pub fn command<A: Args>(chapter: &Chapter) -> Command {
    // The flag structs' own doc comments would set `about`; the chapter's line is set last.
    A::augment_args(CommonArgs::augment_args(Command::new(chapter.name)))
        .about(chapter.about)
        .version(env!("CARGO_PKG_VERSION"))
        .after_help(ENV_HELP)
}

impl Setup {
    /// The approver the permission hook asks: the session's allowances ([`Setup::allowed`],
    /// which get `approval`'s `--allow` programs) first, through a [`SessionApprover`]; then, in
    /// the offline demo, a [`ScriptedApprover`] that answers yes and shows the exchange, and
    /// otherwise what `approval` (`--yes`, `--no`, neither) asks for. Without `--yes` or `--no`,
    /// the terminal is asked only while [`Setup::asking`] is open: during an automatic turn the
    /// call gets that turn's refusal instead ([`GatedApprover`]).
    pub fn approver(&self, approval: &ApprovalArgs) -> Box<dyn Approver> {
        let asked: Box<dyn Approver> = if self.demo {
            Box::new(ScriptedApprover::new(true, self.events.clone()))
        } else if approval.yes || approval.no {
            approval.approver()
        } else {
            Box::new(GatedApprover::new(approval.approver(), self.asking.clone()))
        };
        for program in &approval.allow {
            self.allowed.allow(program, Source::Flag);
        }
        Box::new(SessionApprover::new(asked, self.allowed.clone(), self.events.clone()))
    }

    /// The course's hooks ([`hooks::course_hooks`]) wired to this run: the terminal listener, the
    /// approver for `approval` ([`Setup::approver`]), the workspace rule and WORKDIR; a file
    /// tool's path outside the workspace is asked about (course s04).
    pub fn course_hooks(&self, approval: &ApprovalArgs) -> HookRegistry {
        self.course_hooks_with(approval, HookSet::default())
    }

    /// [`Setup::course_hooks`] with the chapter's own [`HookSet`] (which hooks, the deny list's
    /// wording); outside access is always this run's workspace's.
    pub fn course_hooks_with(&self, approval: &ApprovalArgs, set: HookSet) -> HookRegistry {
        let set = HookSet { outside: Some(self.workspace.clone()), ..set };
        hooks::course_hooks_with(
            self.events.clone(),
            self.approver(approval),
            self.inside_workspace(),
            self.workdir(),
            set,
        )
    }
}

/// The course's environment clause, `{ENV}` in every SYSTEM prompt from s06 on (COURSE §4): the
/// course has a cmd.exe sentence for Windows; the chapters run on Unix-likes.
pub const ENVIRONMENT: &str = "Unix-like: the bash tool runs the system shell";

/// The s04 kernel, on which each of the course's chapters from s06 on adds one mechanism
/// (COURSE §4): the five base tools and the course's hooks with the permission check, and no
/// todo list. So the mains of s06–s09 differ only in their mechanism.
pub struct Kernel {
    /// `bash`, `read_file`, `write_file`, `edit_file`, `glob`, in that order.
    pub tools: DispatchMap,
    /// The course's hooks ([`hooks::course_hooks`]), shared, so that a subagent runs under the
    /// same log, deny list and `Allow? [y/N]` as its parent.
    pub hooks: Shared<HookRegistry>,
}

impl Setup {
    /// The s04 kernel for this run: the five base tools in this workspace with the flags' limits,
    /// and the course's hooks answering `Allow? [y/N]` as `approval` says ([`Setup::approver`]).
    pub fn kernel(&self, approval: &ApprovalArgs) -> Kernel {
        self.kernel_with(approval, HookSet::default())
    }

    /// [`Setup::kernel`] with the hooks `set` picks ([`Setup::course_hooks_with`]): s08 has no
    /// `UserPromptSubmit` or `Stop` hook and handles `compact` itself; s08 and s09 name the
    /// deny-list entry.
    pub fn kernel_with(&self, approval: &ApprovalArgs, set: HookSet) -> Kernel {
        Kernel {
            tools: tools::all(&self.workspace, &self.tool_options),
            hooks: Shared::new(self.course_hooks_with(approval, set)),
        }
    }
}
