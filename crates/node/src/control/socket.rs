//! The control socket (a Unix stream socket): one command line in, one JSON document out.
//! `status` reports SAs (RFC 4301 §4.4.2 usage, RFC 4303 §3.4.3 replay state), every drop counter
//! by name and the node's packet totals.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How long a client may take to send its command; the data path waits meanwhile.
const CLIENT_TIMEOUT: Duration = Duration::from_millis(200);

/// The listening control socket; removes its file when dropped.
#[derive(Debug)]
pub struct ControlServer {
    listener: UnixListener,
    path: PathBuf,
}

impl ControlServer {
    /// Binds `path`, replacing a stale socket file left by a node that died.
    pub fn bind(path: &Path) -> io::Result<ControlServer> {
        if UnixStream::connect(path).is_ok() {
            return Err(io::Error::new(
                io::ErrorKind::AddrInUse,
                format!("{}: another node answers on this socket", path.display()),
            ));
        }
        let _ = std::fs::remove_file(path);
        let listener = UnixListener::bind(path)?;
        listener.set_nonblocking(true)?;
        Ok(ControlServer { listener, path: path.to_path_buf() })
    }

    /// Descriptor to poll.
    pub fn fd(&self) -> RawFd {
        self.listener.as_raw_fd()
    }

    /// Answers every pending client; `answer` maps a command to the reply.
    pub fn serve(&self, mut answer: impl FnMut(&str) -> String) {
        loop {
            let (stream, _) = match self.listener.accept() {
                Ok(x) => x,
                Err(_) => return,
            };
            // A misbehaving client costs at most CLIENT_TIMEOUT and is then dropped.
            let _ = Self::one(stream, &mut answer);
        }
    }

    fn one(stream: UnixStream, answer: &mut impl FnMut(&str) -> String) -> io::Result<()> {
        stream.set_nonblocking(false)?;
        stream.set_read_timeout(Some(CLIENT_TIMEOUT))?;
        stream.set_write_timeout(Some(CLIENT_TIMEOUT))?;
        let mut line = String::new();
        BufReader::new((&stream).take(256)).read_line(&mut line)?;
        let mut reply = answer(line.trim());
        reply.push('\n');
        (&stream).write_all(reply.as_bytes())
    }
}

impl Drop for ControlServer {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Sends `command` to the node at `path` and returns its reply.
pub fn query(path: &Path, command: &str) -> io::Result<String> {
    let mut s = UnixStream::connect(path)?;
    s.set_read_timeout(Some(Duration::from_secs(5)))?;
    s.write_all(command.as_bytes())?;
    s.write_all(b"\n")?;
    s.shutdown(std::net::Shutdown::Write)?;
    let mut out = String::new();
    s.read_to_string(&mut out)?;
    Ok(out.trim_end().to_string())
}
