//! The chapter's flags: the kernel's `--yes`/`--no`, and the compaction limits, whose defaults
//! are the course's constants (COURSE §4.3). A learner lowers them to watch compaction happen in
//! a short session; a user sets a limit that fits their model.

use agent_cli::chapter::ApprovalArgs;
use clap::error::ErrorKind;
use clap::{ArgMatches, Args, Command, FromArgMatches};

use crate::Limits;

/// The limits as typed; [`CompactArgs`] checks them together.
#[derive(Debug, Clone, Args)]
struct LimitFlags {
    /// Compaction keeps the history (the characters of its JSON, as the course measures it)
    /// under this many: past it, micro-compaction, then fit, then a summary by the model act
    /// before the next request. Set it below your model's context window (roughly 3 characters
    /// per token of English; a 200k-token model holds far more than the default).
    #[arg(long, value_name = "CHARS", default_value_t = 50_000, value_parser = clap::value_parser!(u64).range(1_000..))]
    context_limit: u64,

    /// What micro-compaction and fit bring the history down to once it is over the limit
    /// [default: 4/5 of --context-limit, 40000].
    #[arg(long, value_name = "CHARS", value_parser = clap::value_parser!(u64).range(1..))]
    compact_target: Option<u64>,

    /// Snip past this many messages: the first 3 and the last N-4 stay, the middle is archived
    /// to .transcripts/.
    #[arg(long, value_name = "N", default_value_t = 50, value_parser = clap::value_parser!(u64).range(6..))]
    max_messages: u64,

    /// The most characters one batch of tool results may hold; past it the largest results are
    /// saved to .task_outputs/tool-results/ with a 2,000-character preview.
    #[arg(long, value_name = "CHARS", default_value_t = 200_000, value_parser = clap::value_parser!(u64).range(1..))]
    result_budget: u64,

    /// Only results longer than this are saved by the result budget.
    #[arg(long, value_name = "CHARS", default_value_t = 30_000, value_parser = clap::value_parser!(u64).range(1..))]
    large_result: u64,

    /// Micro-compaction leaves this many of the newest results the model has seen.
    #[arg(long, value_name = "N", default_value_t = 3)]
    keep_results: u64,

    /// Reactive compaction (after a prompt-too-long error) leaves this many of the newest
    /// messages and summarises the rest.
    #[arg(long, value_name = "N", default_value_t = 5)]
    keep_messages: u64,

    /// The most characters of history the summary call is given; a longer history sends its
    /// first quarter and its last three quarters of that.
    #[arg(long, value_name = "CHARS", default_value_t = 80_000, value_parser = clap::value_parser!(u64).range(1_000..))]
    summary_input: u64,
}

impl LimitFlags {
    /// The limits, or what is wrong with them.
    fn limits(&self) -> Result<Limits, String> {
        let size = |v: u64| usize::try_from(v).unwrap_or(usize::MAX);
        let context_limit = size(self.context_limit);
        let target = self.compact_target.map_or(context_limit / 5 * 4, size);
        if target >= context_limit {
            return Err(format!(
                "--compact-target {target} must be below --context-limit {context_limit}: compaction brings the history down to the target once it is over the limit"
            ));
        }
        Ok(Limits {
            context_limit,
            target,
            result_batch: size(self.result_budget),
            large_result: size(self.large_result),
            summary_input: size(self.summary_input),
            keep_recent_results: size(self.keep_results),
            keep_recent_messages: size(self.keep_messages),
            max_messages: size(self.max_messages),
            snip_to: size(self.max_messages),
        })
    }
}

/// s08's command line beyond the common flags: the kernel's approval flags and the compaction
/// [`Limits`] (`--context-limit`, `--compact-target`, `--max-messages`, `--result-budget`,
/// `--large-result`, `--keep-results`, `--keep-messages`, `--summary-input`). Limits that do not
/// fit together (a target at or above the limit) are a usage error, exit code 2.
#[derive(Debug, Clone)]
pub struct CompactArgs {
    /// `--yes` / `--no`.
    pub approval: ApprovalArgs,
    /// The compaction limits.
    pub limits: Limits,
}

impl FromArgMatches for CompactArgs {
    fn from_arg_matches(matches: &ArgMatches) -> Result<Self, clap::Error> {
        let approval = ApprovalArgs::from_arg_matches(matches)?;
        let limits = LimitFlags::from_arg_matches(matches)?
            .limits()
            .map_err(|why| clap::Error::raw(ErrorKind::ArgumentConflict, format!("{why}\n")))?;
        Ok(Self { approval, limits })
    }

    fn update_from_arg_matches(&mut self, matches: &ArgMatches) -> Result<(), clap::Error> {
        *self = Self::from_arg_matches(matches)?;
        Ok(())
    }
}

impl Args for CompactArgs {
    fn augment_args(cmd: Command) -> Command {
        LimitFlags::augment_args(ApprovalArgs::augment_args(cmd))
    }

    fn augment_args_for_update(cmd: Command) -> Command {
        LimitFlags::augment_args_for_update(ApprovalArgs::augment_args_for_update(cmd))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<CompactArgs, clap::Error> {
        let cmd = CompactArgs::augment_args(Command::new("s08").no_binary_name(true));
        CompactArgs::from_arg_matches(&cmd.try_get_matches_from(args)?)
    }

    #[test]
    fn the_defaults_are_the_courses_constants() -> Result<(), clap::Error> {
        assert_eq!(parse(&[])?.limits, Limits::default());
        Ok(())
    }

    #[test]
    fn the_target_follows_the_limit_unless_given() -> Result<(), clap::Error> {
        let limits = parse(&["--context-limit", "20000"])?.limits;
        assert_eq!((limits.context_limit, limits.target), (20_000, 16_000));
        let limits = parse(&["--context-limit", "20000", "--compact-target", "5000", "--yes"])?;
        assert_eq!((limits.limits.target, limits.approval.yes), (5_000, true));
        Ok(())
    }

    #[test]
    fn limits_that_do_not_fit_together_are_a_usage_error() {
        let err = parse(&["--context-limit", "20000", "--compact-target", "20000"]).err();
        let text = err.map(|e| e.to_string()).unwrap_or_default();
        assert!(text.contains("--compact-target 20000 must be below --context-limit 20000"), "{text}");
        let err = parse(&["--max-messages", "3"]).err().map(|e| e.kind());
        assert_eq!(err, Some(ErrorKind::ValueValidation));
    }
}
