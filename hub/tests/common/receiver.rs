//! A webhook receiver for tests: a real HTTP/1.1 server on 127.0.0.1 (keep-alive, one thread per
//! connection) that records every POST it is sent and answers as told: 200, 503, slowly (past the
//! sender's 10 s), or not at all (its port closed: connection refused), then back to 200.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

/// How the receiver answers now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Ok,
    Fail,
    /// Answers 200 after 11 s: the sender has given up at 10 s.
    Slow,
}

/// One POST as received.
#[derive(Clone, Debug)]
pub struct Received {
    pub event_id: i64,
    pub signature: String,
    pub body: String,
    /// The status it was answered (0: the connection went before the answer).
    pub status: u16,
    /// How the receiver was answering when it came.
    pub mode: Mode,
}

#[derive(Default)]
struct State {
    mode: Mutex<Option<Mode>>,
    received: Mutex<Vec<Received>>,
    changed: Condvar,
    in_flight: AtomicUsize,
    most_in_flight: AtomicUsize,
    closed: AtomicBool,
}

pub struct Receiver {
    pub port: u16,
    state: Arc<State>,
    listener: Mutex<Option<Arc<TcpListener>>>,
}

impl Receiver {
    pub fn start() -> Receiver {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let r = Receiver {
            port,
            state: Arc::new(State::default()),
            listener: Mutex::new(None),
        };
        *r.state.mode.lock().unwrap() = Some(Mode::Ok);
        r.serve(listener);
        r
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/hook", self.port)
    }

    fn serve(&self, listener: TcpListener) {
        let listener = Arc::new(listener);
        *self.listener.lock().unwrap() = Some(listener.clone());
        self.state.closed.store(false, Ordering::SeqCst);
        let state = self.state.clone();
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                if state.closed.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(conn) = conn else { continue };
                let state = state.clone();
                std::thread::spawn(move || connection(conn, &state));
            }
        });
    }

    pub fn set(&self, mode: Mode) {
        *self.state.mode.lock().unwrap() = Some(mode);
    }

    /// Closes the port: connections are refused until `reopen`.
    pub fn close(&self) {
        self.state.closed.store(true, Ordering::SeqCst);
        if let Some(l) = self.listener.lock().unwrap().take() {
            // Wakes the accept loop, which then sees `closed` and drops the listener.
            let _ = TcpStream::connect(l.local_addr().expect("addr"));
        }
        // The listener is gone once the accept thread dropped it: a connect is then refused.
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while TcpStream::connect(("127.0.0.1", self.port)).is_ok() {
            assert!(std::time::Instant::now() < deadline, "the port did not close");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Opens the same port again, answering 200.
    pub fn reopen(&self) {
        self.set(Mode::Ok);
        let listener = TcpListener::bind(("127.0.0.1", self.port)).expect("bind the same port again");
        self.serve(listener);
    }

    pub fn received(&self) -> Vec<Received> {
        self.state.received.lock().unwrap().clone()
    }

    /// Waits (on the receiver's own signal, at most `patience`) until `ok` holds of what arrived.
    pub fn wait_until(&self, what: &str, patience: Duration, ok: impl Fn(&[Received]) -> bool) {
        let deadline = std::time::Instant::now() + patience;
        let mut got = self.state.received.lock().unwrap();
        while !ok(&got) {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            assert!(
                !left.is_zero(),
                "{what}: not within {patience:?} ({} received)",
                got.len()
            );
            got = self.state.changed.wait_timeout(got, left).unwrap().0;
        }
    }

    /// The most requests it was answering at one time.
    pub fn most_in_flight(&self) -> usize {
        self.state.most_in_flight.load(Ordering::SeqCst)
    }
}

fn connection(conn: TcpStream, state: &State) {
    let mut reader = BufReader::new(conn.try_clone().expect("clone"));
    let mut out = conn;
    loop {
        let mut head = Vec::new();
        loop {
            let mut line = String::new();
            match reader.read_line(&mut line) {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
            if line == "\r\n" {
                break;
            }
            head.push(line.trim_end().to_string());
        }
        let header = |name: &str| {
            head.iter()
                .find_map(|h| {
                    let (k, v) = h.split_once(':')?;
                    k.eq_ignore_ascii_case(name).then(|| v.trim().to_string())
                })
                .unwrap_or_default()
        };
        let len: usize = header("content-length").parse().unwrap_or(0);
        let mut body = vec![0; len];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        let n = state.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        state.most_in_flight.fetch_max(n, Ordering::SeqCst);
        let mode = state.mode.lock().unwrap().unwrap_or(Mode::Ok);
        let status = match mode {
            Mode::Ok => 200,
            Mode::Fail => 503,
            Mode::Slow => {
                std::thread::sleep(Duration::from_secs(11));
                200
            }
        };
        let answered = write!(
            out,
            "HTTP/1.1 {status} X\r\nContent-Length: 0\r\nConnection: keep-alive\r\n\r\n"
        )
        .and_then(|_| out.flush())
        .is_ok();
        state.in_flight.fetch_sub(1, Ordering::SeqCst);
        state.received.lock().unwrap().push(Received {
            event_id: header("quota-event-id").parse().unwrap_or(0),
            signature: header("quota-signature"),
            body: String::from_utf8_lossy(&body).into_owned(),
            status: if answered { status } else { 0 },
            mode,
        });
        state.changed.notify_all();
    }
}
