//! The workspace is a handle (issue 13): writes stay inside under a concurrent swap, special files
//! are refused without hanging, writes keep mode and owner and refuse read-only files, and CRLF
//! files can be edited with the text `read_file` showed.
//!
//! These run as root on the project's machines. Root passes every permission check, so the
//! read-only test uses a file whose mode has no write bit (which `write_file` refuses for root too),
//! and the owner test gives the file to another uid (which only root can do; it then checks that
//! the owner survives the replacement).

use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use rustix::fs::{CWD, RenameFlags};
use serde_json::json;

use super::tools_support::{Fixture, TestResult, tree};

/// Issue 13, input 2: a folder inside the workspace is swapped with a symlink pointing outside
/// (`renameat2(RENAME_EXCHANGE)` in a loop) while 150 `write_file` calls write into it. Nothing
/// may land outside, and no temporary file may be left anywhere.
#[tokio::test(flavor = "multi_thread")]
async fn a_folder_swapped_for_an_outside_symlink_never_lets_a_write_out() -> TestResult {
    let fx = Fixture::new()?;
    let outside = tempfile::tempdir()?;
    std::fs::create_dir(fx.path("sub"))?;
    std::os::unix::fs::symlink(outside.path(), fx.path("swap"))?;

    let stop = Arc::new(AtomicBool::new(false));
    let swapper = {
        let stop = Arc::clone(&stop);
        let (a, b) = (fx.path("sub"), fx.path("swap"));
        std::thread::spawn(move || {
            let mut swaps = 0u64;
            while !stop.load(Ordering::Relaxed) {
                if rustix::fs::renameat_with(CWD, &a, CWD, &b, RenameFlags::EXCHANGE).is_ok() {
                    swaps += 1;
                }
                // A random pause, so that the writes meet both states and the moments between.
                std::thread::sleep(std::time::Duration::from_micros(fastrand::u64(0..400)));
            }
            swaps
        })
    };
    let mut written = 0;
    let mut refused = 0;
    for i in 0..150 {
        let out = fx.call("write_file", json!({"path": format!("sub/f{i}.txt"), "content": "x"})).await;
        if out.is_error { refused += 1 } else { written += 1 }
    }
    stop.store(true, Ordering::Relaxed);
    let swaps = swapper.join().map_err(|_| "swapper thread panicked")?;
    eprintln!("{swaps} swaps; {written} writes succeeded, {refused} were refused");
    assert!(swaps > 0, "the swapper never swapped");

    let outside_now: Vec<_> = std::fs::read_dir(outside.path())?.collect::<Result<_, _>>()?;
    assert!(outside_now.is_empty(), "written outside: {outside_now:?}");
    // Whichever name the real folder has now, it holds only the files written, nothing temporary.
    let real = if fx.path("sub").is_symlink() { fx.path("swap") } else { fx.path("sub") };
    let names: Vec<String> = std::fs::read_dir(&real)?
        .map(|e| e.map(|e| e.file_name().to_string_lossy().into_owned()))
        .collect::<Result<_, _>>()?;
    assert_eq!(names.len(), written, "{names:?}");
    assert!(names.iter().all(|n| n.starts_with('f') && n.ends_with(".txt")), "{names:?}");
    Ok(())
}

/// Issue 13, input 1 (in process; `tests/suite/s02.rs` does it against the binary): the workspace
/// folder is moved away and a symlink to an outside folder takes its place. The tools keep
/// working in the real folder, wherever it moved; nothing is written outside.
#[tokio::test]
async fn a_re_pointed_workspace_path_does_not_redirect_the_tools() -> TestResult {
    let fx = Fixture::new()?;
    std::fs::write(fx.path("a.txt"), "alpha\n")?;
    let outside = tempfile::tempdir()?;
    let moved = fx.root().with_extension("moved");
    std::fs::rename(fx.root(), &moved)?;
    std::os::unix::fs::symlink(outside.path(), fx.root())?;

    let w = fx.call("write_file", json!({"path": "new.txt", "content": "hello"})).await;
    let e = fx.call("edit_file", json!({"path": "a.txt", "old_text": "alpha", "new_text": "beta"})).await;
    let r = fx.call("read_file", json!({"path": "a.txt"})).await;
    let result = (|| -> TestResult {
        assert!(!w.is_error && !e.is_error && !r.is_error, "{w:?} {e:?} {r:?}");
        assert_eq!(r.content, "beta");
        assert_eq!(std::fs::read_to_string(moved.join("new.txt"))?, "hello");
        assert!(tree(outside.path())?.is_empty(), "{:?}", tree(outside.path())?);
        Ok(())
    })();
    // Put the folder back so the fixture's temporary folder is removed.
    std::fs::remove_file(fx.root())?;
    std::fs::rename(&moved, fx.root())?;
    result
}

/// Issue 13, inputs 8 and 9 (in process): a FIFO is refused by every file tool at once, never
/// waited on, and never replaced; so is a character device where one can be made (root).
#[tokio::test]
async fn fifos_and_devices_are_refused_not_opened_or_replaced() -> TestResult {
    let fx = Fixture::new()?;
    let c_path =
        |name: &str| std::ffi::CString::new(fx.path(name).as_os_str().as_bytes()).map_err(|e| e.to_string());
    let (pipe, null) = (c_path("pipe")?, c_path("null")?);
    // SAFETY: mkfifo and mknod read a NUL-terminated path that lives across the call.
    if unsafe { libc::mkfifo(pipe.as_ptr(), 0o666) } != 0 {
        return Err(std::io::Error::last_os_error().into());
    }
    // /dev/null's own numbers, whatever the system numbers it.
    let dev = std::fs::metadata("/dev/null")?.rdev();
    // SAFETY: as above; `dev` is a plain number.
    let have_dev = unsafe { libc::mknod(null.as_ptr(), libc::S_IFCHR | 0o666, dev as libc::dev_t) } == 0;
    if !have_dev {
        eprintln!("NOTE: cannot make a character device here (not root); only the FIFO is tried");
    }
    for name in ["pipe", "null"].into_iter().take(if have_dev { 2 } else { 1 }) {
        let calls = [
            ("read_file", json!({"path": name})),
            ("write_file", json!({"path": name, "content": "x"})),
            ("edit_file", json!({"path": name, "old_text": "a", "new_text": "b"})),
        ];
        for (tool, input) in calls {
            let out = tokio::time::timeout(std::time::Duration::from_secs(20), fx.call(tool, input))
                .await
                .map_err(|_| format!("{tool} on {name} hung"))?;
            assert!(out.is_error, "{tool} {name}: {out:?}");
            assert_eq!(out.content, format!("Error: {name} is not a regular file"), "{tool}");
        }
    }
    assert!(std::fs::symlink_metadata(fx.path("pipe"))?.file_type().is_fifo());
    if have_dev {
        assert!(std::fs::symlink_metadata(fx.path("null"))?.file_type().is_char_device());
    }
    Ok(())
}

/// Issue 13, input 9: the atomic replacement keeps the mode and the owner, and a read-only file
/// is refused. As root the read-only file is one whose mode has no write bit.
#[tokio::test]
async fn writes_keep_mode_and_owner_and_refuse_read_only_files() -> TestResult {
    let fx = Fixture::new()?;
    std::fs::write(fx.path("ro.txt"), "keep me\n")?;
    std::fs::set_permissions(fx.path("ro.txt"), std::fs::Permissions::from_mode(0o444))?;
    for (tool, input) in [
        ("write_file", json!({"path": "ro.txt", "content": "clobbered"})),
        ("edit_file", json!({"path": "ro.txt", "old_text": "keep", "new_text": "lose"})),
    ] {
        let out = fx.call(tool, input).await;
        assert_eq!(out.content, "Error: ro.txt is read-only (mode 0444); not changed", "{tool}");
    }
    assert_eq!(std::fs::read_to_string(fx.path("ro.txt"))?, "keep me\n");

    std::fs::write(fx.path("mode.sh"), "echo one\n")?;
    std::fs::set_permissions(fx.path("mode.sh"), std::fs::Permissions::from_mode(0o750))?;
    let chowned = std::os::unix::fs::chown(fx.path("mode.sh"), Some(4242), Some(4343)).is_ok();
    let out = fx.call("edit_file", json!({"path": "mode.sh", "old_text": "one", "new_text": "two"})).await;
    assert!(!out.is_error, "{out:?}");
    let meta = std::fs::metadata(fx.path("mode.sh"))?;
    assert_eq!(std::fs::read_to_string(fx.path("mode.sh"))?, "echo two\n");
    assert_eq!(meta.mode() & 0o7777, 0o750);
    if chowned {
        assert_eq!((meta.uid(), meta.gid()), (4242, 4343), "the owner survived the replacement");
    } else {
        eprintln!("NOTE: not root, so the file could not be given to another user; owner not checked");
        assert_eq!(out.content, "Edited mode.sh");
    }
    Ok(())
}

/// Issue 13, input 10: a CRLF file is shown without `\r`, an edit with the shown text works, and
/// the file keeps its CRLF line ends.
#[tokio::test]
async fn a_crlf_file_can_be_edited_with_the_text_read_file_showed() -> TestResult {
    let fx = Fixture::new()?;
    std::fs::write(fx.path("crlf.txt"), "alpha\r\nbeta\r\ngamma\r\n")?;
    let shown = fx.call("read_file", json!({"path": "crlf.txt"})).await;
    assert_eq!(shown.content, "alpha\nbeta\ngamma");
    let out = fx
        .call("edit_file", json!({"path": "crlf.txt", "old_text": "alpha\nbeta", "new_text": "one\ntwo"}))
        .await;
    assert_eq!(out.content, "Edited crlf.txt");
    assert_eq!(std::fs::read(fx.path("crlf.txt"))?, b"one\r\ntwo\r\ngamma\r\n");
    Ok(())
}
