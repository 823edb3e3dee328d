//! Tools, in process through `DispatchMap::dispatch`: `glob "**/*.rs"` over a generated
//! tree of 100,000 files, and `read_file` with `limit: 10` on a 100 MB file, with the bytes this
//! process read (`rchar` of `/proc/self/io`) and its peak RSS above the RSS before the call; then
//! what the sandbox and the session add to one `bash` call ([`crate::bash_call`]).

use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};

use agent_core::dispatch::{DispatchMap, ToolOutcome};
use agent_core::messages::ToolUseBlock;
use agent_core::tools::{glob, read_file};
use agent_core::workspace::Workspace;
use serde_json::{Value, json};

use crate::Scale;
use crate::child::status_field;
use crate::report::{Report, median, ms};

/// Bound on `glob` over the generated tree.
const GLOB_BOUND_MS: f64 = 1000.0;

/// Bound on the megabytes `read_file` with `limit: 10` may read: the shown lines plus its counting
/// budget (`agent_core::tools::COUNT_BYTES`, 4 MiB) and one chunk either side, under a
/// tenth of the 100 MB file, so it cannot have read the whole file.
const READ_BOUND_MB: f64 = 8.0;

/// Creates `files` empty files, half `.rs` and half `.md`, in folders of 100 two levels deep
/// (`dNNN/sN/fNNN.rs`).
fn generate_tree(root: &Path, files: usize) -> std::io::Result<()> {
    for i in 0..files {
        let dir = root.join(format!("d{:03}", i / 1000)).join(format!("s{}", (i / 100) % 10));
        if i % 100 == 0 {
            std::fs::create_dir_all(&dir)?;
        }
        let ext = if i % 2 == 0 { "rs" } else { "md" };
        std::fs::File::create(dir.join(format!("f{:03}.{ext}", i % 100)))?;
    }
    Ok(())
}

/// Writes a text file of `mib` MiB made of 100-byte lines.
fn generate_big_file(path: &Path, mib: usize) -> std::io::Result<u64> {
    let line = format!("{:0>99}\n", "");
    let block: String = line.repeat(10_486); // ≈ 1 MiB
    let mut f = std::io::BufWriter::new(std::fs::File::create(path)?);
    for _ in 0..mib {
        f.write_all(block.as_bytes())?;
    }
    f.flush()?;
    Ok((block.len() * mib) as u64)
}

/// `rchar` of this process: bytes passed to `read(2)` and the like, from page cache or not.
fn rchar() -> Option<u64> {
    let io = std::fs::read_to_string("/proc/self/io").ok()?;
    io.lines().find_map(|l| l.strip_prefix("rchar:")).and_then(|v| v.trim().parse().ok())
}

fn call(rt: &tokio::runtime::Runtime, map: &DispatchMap, name: &str, input: Value) -> ToolOutcome {
    let block = ToolUseBlock {
        id: "toolu_bench".to_owned(),
        name: name.to_owned(),
        input,
        extra: Default::default(),
    };
    rt.block_on(map.dispatch(&block))
}

/// The tools figures.
///
/// # Errors
/// Generating the inputs failed, or a tool answered an error.
pub fn tools(report: &mut Report, scale: Scale) -> Result<(), String> {
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().map_err(|e| e.to_string())?;
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let ws = Workspace::new(dir.path()).map_err(|e| e.to_string())?;
    let map = DispatchMap::new().with(glob(&ws)).with(read_file(&ws));

    // read_file first, while this process's heap is small.
    let big = dir.path().join("big.txt");
    let t = Instant::now();
    let size = generate_big_file(&big, scale.big_file_mib).map_err(|e| e.to_string())?;
    report.info(
        &format!("generate the {} MiB file (not counted)", scale.big_file_mib),
        ms(t.elapsed()),
        "ms",
    );
    // Writing 5 resets VmHWM to the current RSS (Linux ≥ 4.0).
    let _ = std::fs::write("/proc/self/clear_refs", "5");
    let rss_before = status_field("/proc/self/status", "VmRSS:").unwrap_or(0);
    let read_before = rchar().unwrap_or(0);
    let t = Instant::now();
    let out = call(&rt, &map, "read_file", json!({"path": "big.txt", "limit": 10}));
    let took = t.elapsed();
    let read = rchar().unwrap_or(0).saturating_sub(read_before);
    let hwm = status_field("/proc/self/status", "VmHWM:").unwrap_or(0);
    if out.is_error || !out.content.contains("more lines") {
        return Err(format!("read_file answered {:.200}", out.content));
    }
    report.info(&format!("read_file limit 10 on a {} MiB file", scale.big_file_mib), ms(took), "ms");
    report.check(
        &format!("  bytes read (rchar delta; the file is {:.1} MB)", size as f64 / 1e6),
        read as f64 / 1e6,
        READ_BOUND_MB,
        "MB",
    );
    report.info(
        "  peak RSS above the RSS before the call",
        hwm.saturating_sub(rss_before) as f64 / 1e3 * 1.024,
        "MB",
    );

    // glob over the generated tree.
    let tree = dir.path().join("tree");
    let t = Instant::now();
    generate_tree(&tree, scale.glob_files).map_err(|e| e.to_string())?;
    report.info(&format!("generate the {}-file tree (not counted)", scale.glob_files), ms(t.elapsed()), "ms");
    let mut times: Vec<Duration> = Vec::new();
    for _ in 0..3 {
        let t = Instant::now();
        let out = call(&rt, &map, "glob", json!({"pattern": "**/*.rs"}));
        times.push(t.elapsed());
        if out.is_error || !out.content.contains("more matches omitted") {
            return Err(format!("glob answered {:.200}", out.content));
        }
    }
    report.check(
        &format!("glob \"**/*.rs\" over {} files (median of 3)", scale.glob_files),
        ms(median(&times)),
        GLOB_BOUND_MS,
        "ms",
    );
    report.info("  first of the 3 runs", ms(times[0]), "ms");
    let t = Instant::now();
    drop(dir);
    report.info("remove the tree and file (not counted)", ms(t.elapsed()), "ms");

    println!("\n== one bash call: what the sandbox and the session add");
    crate::bash_call::bash_call(report, scale)
}
