//! The floor under the harness's CPU per round: what the kernel charges a process for writing a
//! request body of a given size to a loopback TCP connection (issue 16).
//!
//! The API is stateless, so every round sends the whole history; on loopback the sender's CPU
//! time also covers the TCP work of the receiving side (the kernel runs it in the sender's
//! context). No harness can send a body for less, so this figure says how much of a round's CPU
//! is the body's bytes and how much is the harness's own work.
//!
//! How: a thread writes `bytes` to a connected loopback socket (one `write_all`, as hyper does
//! with its vectored writes) while another thread reads and discards them; the writer's own CPU
//! time (`CLOCK_THREAD_CPUTIME_ID`, user and kernel) is measured around the write, the least of
//! `runs` (a floor: every disturbance, such as the reader being scheduled late, only adds to it).

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::Duration;

/// CPU time of the calling thread so far.
fn thread_cpu() -> Duration {
    // SAFETY: `timespec` is plain old data; clock_gettime writes it.
    let mut ts: libc::timespec = unsafe { std::mem::zeroed() };
    // SAFETY: a valid clock id and a valid pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    Duration::new(u64::try_from(ts.tv_sec).unwrap_or(0), u32::try_from(ts.tv_nsec).unwrap_or(0))
}

/// The least writer CPU time, over `runs`, to send `bytes` over one loopback connection.
///
/// # Errors
/// The loopback connection could not be set up or broke.
pub fn loopback_write_cpu(bytes: usize, runs: usize) -> Result<Duration, String> {
    let listener = TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    let reader = std::thread::spawn(move || -> std::io::Result<()> {
        let (mut stream, _) = listener.accept()?;
        let mut buf = vec![0u8; 256 * 1024];
        while stream.read(&mut buf)? > 0 {}
        Ok(())
    });
    let mut stream = TcpStream::connect(addr).map_err(|e| e.to_string())?;
    stream.set_nodelay(true).map_err(|e| e.to_string())?;
    let body = vec![b'x'; bytes];
    let mut times = Vec::with_capacity(runs);
    for _ in 0..runs {
        let before = thread_cpu();
        stream.write_all(&body).map_err(|e| e.to_string())?;
        times.push(thread_cpu().saturating_sub(before));
    }
    drop(stream);
    reader.join().map_err(|_| "the reading thread panicked".to_owned())?.map_err(|e| e.to_string())?;
    Ok(times.into_iter().min().unwrap_or_default())
}
