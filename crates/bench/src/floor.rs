//! The floors under the harness's CPU per round: what the kernel charges a process for
//! writing a request body of a given size to a loopback TCP connection
//! ([`loopback_write_cpu`]), and what a bare client spends on one request/reply exchange with
//! another process ([`loopback_exchange_cpu`]).
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

/// CPU time of the calling thread so far (zero if the clock cannot be read).
fn thread_cpu() -> Duration {
    crate::child::own_thread_cpu().unwrap_or_default()
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

/// The hidden first argument that makes this binary the replying side of
/// [`loopback_exchange_cpu`]: `bench --exchange-peer ADDR REQUEST WRITES PIECE`.
pub const PEER_FLAG: &str = "--exchange-peer";

/// The median CPU time a client thread spends on one request/reply exchange over a loopback
/// connection, with no HTTP and no parsing: write `request` bytes, then read a reply the other
/// side writes in `reply_writes` pieces of `piece` bytes each, as the mock writes an SSE reply
/// one event at a time. Median of `runs` exchanges, after 100 not counted.
///
/// This is the part of a round that any client pays on this machine: the kernel's TCP work on
/// both sides of the send, going to sleep until the reply, and being woken for it. The other side
/// is another process ([`PEER_FLAG`], a fresh copy of this binary), as the mock server is to `s03`.
///
/// # Errors
/// The peer could not start, or the loopback connection could not be set up or broke.
pub fn loopback_exchange_cpu(
    request: usize,
    reply_writes: usize,
    piece: usize,
    runs: usize,
) -> Result<Duration, String> {
    const WARM_UP: usize = 100;
    if request == 0 || reply_writes == 0 || piece == 0 {
        return Err(format!(
            "loopback exchange: nothing to exchange ({request} B out, {reply_writes} × {piece} B back)"
        ));
    }
    let listener = TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    let exe = std::env::current_exe().map_err(|e| format!("cannot find this executable: {e}"))?;
    let mut peer = std::process::Command::new(exe)
        .arg(PEER_FLAG)
        .args([addr.to_string(), request.to_string(), reply_writes.to_string(), piece.to_string()])
        .stdin(std::process::Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot start the exchange peer: {e}"))?;
    let exchanged = (|| -> std::io::Result<Vec<Duration>> {
        let mut stream = accept_from(&listener, &mut peer)?;
        stream.set_nodelay(true)?;
        let body = vec![b'x'; request];
        let mut reply = vec![0u8; reply_writes * piece];
        let mut times = Vec::with_capacity(runs);
        for i in 0..WARM_UP + runs {
            let before = thread_cpu();
            stream.write_all(&body)?;
            stream.read_exact(&mut reply)?;
            if i >= WARM_UP {
                times.push(thread_cpu().saturating_sub(before));
            }
        }
        Ok(times)
    })();
    // Closing the connection ends the peer.
    let status = peer.wait().map_err(|e| e.to_string())?;
    let times = exchanged.map_err(|e| format!("loopback exchange: {e} (peer {status})"))?;
    Ok(crate::report::median(&times))
}

/// Accepts the peer's connection, or fails if the peer exits or has not connected within 10 s
/// (so a peer that cannot connect does not leave the bench waiting forever).
fn accept_from(listener: &TcpListener, peer: &mut std::process::Child) -> std::io::Result<TcpStream> {
    listener.set_nonblocking(true)?;
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        match listener.accept() {
            Ok((stream, _)) => {
                stream.set_nonblocking(false)?;
                return Ok(stream);
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                if let Some(status) = peer.try_wait()? {
                    return Err(std::io::Error::other(format!(
                        "the peer exited before connecting ({status})"
                    )));
                }
                if std::time::Instant::now() > deadline {
                    let _ = peer.kill();
                    return Err(std::io::Error::other("the peer did not connect within 10 s"));
                }
                std::thread::sleep(Duration::from_millis(1));
            }
            Err(e) => return Err(e),
        }
    }
}

/// The replying side of [`loopback_exchange_cpu`]: connects to ADDR, then for each REQUEST bytes
/// read writes WRITES pieces of PIECE bytes, until the connection closes.
pub fn peer_main(args: &[std::ffi::OsString]) -> std::process::ExitCode {
    let parsed = (|| -> Option<(String, usize, usize, usize)> {
        let text = |i: usize| args.get(i)?.to_str().map(str::to_owned);
        let number = |i: usize| text(i)?.parse().ok();
        Some((text(0)?, number(1)?, number(2)?, number(3)?))
    })();
    let Some((addr, request, writes, piece)) = parsed else {
        eprintln!("usage: bench {PEER_FLAG} ADDR REQUEST WRITES PIECE");
        return std::process::ExitCode::from(2);
    };
    let served = (|| -> std::io::Result<()> {
        let mut stream = TcpStream::connect(&addr)?;
        stream.set_nodelay(true)?;
        let mut buf = vec![0u8; request];
        let reply = vec![b'e'; piece];
        loop {
            match stream.read_exact(&mut buf) {
                Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(()),
                other => other?,
            }
            for _ in 0..writes {
                stream.write_all(&reply)?;
            }
        }
    })();
    match served {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("bench {PEER_FLAG}: {e}");
            std::process::ExitCode::from(1)
        }
    }
}
