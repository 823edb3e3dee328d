//! `trace FILE [-o PAGE]`: writes the page that steps through a session's trace.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;

/// Draw a session recorded with `--trace FILE` (any chapter) as one self-contained HTML page:
/// a step per request, with the messages as sent (new blocks marked), the response, the tool
/// calls and results, tokens in and out, the context's size over time, and where a mechanism
/// acted. Open the page in any browser; it needs no network.
#[derive(Debug, Parser)]
#[command(
    name = "trace",
    version,
    after_help = "Make a trace first, e.g.: cargo run -p s06 -- --demo --trace s06.jsonl\n\
Then: cargo run -p trace -- s06.jsonl   (writes s06.jsonl.html)\n\
In the page: Previous / Play / Next, the arrow keys, Home and End; a bar of the timeline jumps to its step."
)]
struct Args {
    /// The trace: JSON lines written by --trace or /trace.
    file: PathBuf,

    /// Where to write the page [default: FILE.html beside the trace].
    #[arg(short, long, value_name = "PAGE")]
    output: Option<PathBuf>,
}

fn main() -> ExitCode {
    let args = Args::parse();
    let text = match std::fs::read(&args.file) {
        Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
        Err(e) => {
            eprintln!("trace: cannot read {}: {e}", args.file.display());
            return ExitCode::from(1);
        }
    };
    let name = args
        .file
        .file_name()
        .map_or_else(|| args.file.display().to_string(), |n| n.to_string_lossy().into_owned());
    let (page, trace) = trace::page_for(&text, &name);
    for skipped in &trace.skipped {
        eprintln!("trace: skipped {skipped}");
    }
    let output = args.output.unwrap_or_else(|| trace::default_output(&args.file));
    if let Err(e) = std::fs::write(&output, page) {
        eprintln!("trace: cannot write {}: {e}", output.display());
        return ExitCode::from(1);
    }
    let lanes = trace.lanes.join(", ");
    println!(
        "wrote {} ({} step(s), one per request; lanes: {}); open it in a browser",
        output.display(),
        trace.steps.len(),
        if lanes.is_empty() { "none" } else { &lanes }
    );
    ExitCode::SUCCESS
}
