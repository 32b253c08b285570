//! Unix sockets end to end, through the real binary and the fake model server: a block cannot
//! reach a daemon outside the sandbox (a real tmux server, an abstract listener, a symlink or `..`
//! to an outside socket, a racing thread that rewrites the address during the connect), while
//! sockets in the work dir, sockets listed in `[exec] allow_sockets`, TCP (blocking and
//! non-blocking) and socket pairs keep working.
//!
//! The listeners live in this test process: each counts the connections it accepted, so "refused"
//! is checked on the listener's side too, not only from the block's words. Each refusal case also
//! shows the listener was reachable without seek in between, so the tests fail if the guard goes.

use crate::support;

use crate::fake_model;

use std::io::{BufRead, BufReader, Write};
use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::{SocketAddr, UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use fake_model::{FakeModel, Reply};
use support::{Sandbox, stderr, stdout};

/// Fails, saying why, where the kernel cannot supervise connects (the binary would then refuse
/// every unix socket, and these cases would fail for that reason instead).
fn supervised_here() {
    let support = seek::exec::socket_guard::support();
    assert_eq!(
        support,
        &seek::exec::socket_guard::Support::Supervised,
        "these tests need seccomp user notification and pidfd_getfd (Linux 5.6+)"
    );
}

fn fence(tag: &str, code: &str) -> String {
    format!("```{tag}\n{code}\n```")
}

/// Runs one block through seek (headless; the default sandbox unless `extra` says otherwise) and
/// returns seek's output (the block's output is in it) and, when the block failed, what the
/// model was told about it.
fn run_block(sb: &Sandbox, tag: &str, code: &str, extra: &[&str]) -> (String, Option<String>) {
    let server = FakeModel::start(vec![
        Reply::text(format!("Running.\n{}\n", fence(tag, code))),
        Reply::text("Done."),
    ]);
    let mut args = extra.to_vec();
    args.extend(["-p", "try the socket"]);
    let out = sb.seek_at(&server.url(), &args).output().expect("run seek");
    // A refused or failed block makes the task give up (exit 1); a block that worked, 0.
    assert!(matches!(out.status.code(), Some(0 | 1)), "{}", stderr(&out));
    let feedback = server
        .chat_requests()
        .get(1)
        .map(fake_model::Logged::last_user_message)
        .filter(|f| f.starts_with("[failure]"));
    (stdout(&out), feedback)
}

/// A listener that greets every connection with its name and echoes one line back, counting the
/// connections it accepted.
struct Listener {
    accepted: Arc<AtomicUsize>,
}

impl Listener {
    fn at(address: &SocketAddr, name: &'static str) -> Self {
        let listener = UnixListener::bind_addr(address).expect("bind the listener");
        let accepted = Arc::new(AtomicUsize::new(0));
        let counter = accepted.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                counter.fetch_add(1, Ordering::SeqCst);
                std::thread::spawn(move || {
                    let _ = writeln!(stream, "{name}");
                    let mut line = String::new();
                    if BufReader::new(&stream).read_line(&mut line).is_ok() {
                        let _ = write!(stream, "echo:{line}");
                    }
                });
            }
        });
        Self { accepted }
    }

    fn path(path: &Path, name: &'static str) -> Self {
        Self::at(
            &SocketAddr::from_pathname(path).expect("a socket path"),
            name,
        )
    }

    fn accepted(&self) -> usize {
        self.accepted.load(Ordering::SeqCst)
    }
}

/// Connects from this test process (unconfined): the listener is live and answers.
fn greeting_from(address: &SocketAddr) -> String {
    let stream = UnixStream::connect_addr(address).expect("the listener answers outside seek");
    let mut line = String::new();
    BufReader::new(stream)
        .read_line(&mut line)
        .expect("a greeting");
    line.trim().to_owned()
}

/// A Python block that connects to each address (a path, or `\0name`), sends a line and prints
/// the reply, or prints the errno it failed with.
fn python_connects(addresses: &[&str]) -> String {
    let list: Vec<String> = addresses.iter().map(|a| format!("{a:?}")).collect();
    format!(
        r#"import socket
for address in [{}]:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect(address)
        s.sendall(b"hello\n")
        f = s.makefile()
        print("connected", f.readline().strip(), f.readline().strip())
    except OSError as e:
        print("refused errno", e.errno, e.strerror)
    s.close()"#,
        list.join(", ")
    )
}

fn unique_name(what: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!("seek-test-{what}-{}-{nanos}", std::process::id())
}

/// A tmux server on a private socket, killed when dropped.
struct Tmux {
    socket: PathBuf,
}

impl Tmux {
    fn start(socket: &Path) -> Self {
        let tmux = Self {
            socket: socket.to_owned(),
        };
        let status = tmux.command(&["new-session", "-d"]).status();
        assert!(
            status.is_ok_and(|s| s.success()),
            "tmux starts (install tmux: apt-get install tmux)"
        );
        tmux
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new("tmux");
        cmd.arg("-S")
            .arg(&self.socket)
            .args(args)
            .env_remove("TMUX")
            // The session's shell must stay up (a user whose login shell is nologin has none).
            .env("SHELL", "/bin/sh")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        cmd
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.command(&["kill-server"]).status();
    }
}

#[test]
fn a_block_cannot_ask_a_tmux_server_outside_to_write_for_it() {
    supervised_here();
    let sb = Sandbox::new();
    let outside = sb.path("outside");
    std::fs::create_dir_all(&outside).expect("outside dir");
    let tmux = Tmux::start(&outside.join("tmux.sock"));
    // The server runs commands for whoever reaches its socket: seek is what stands in between.
    let control = outside.join("control");
    let ran = tmux
        .command(&["run-shell", &format!("touch {}", control.display())])
        .status();
    assert!(ran.is_ok_and(|s| s.success()) && control.exists());

    let pwned = outside.join("pwned");
    let (output, feedback) = run_block(
        &sb,
        "bash",
        &format!(
            "tmux -S {} run-shell 'touch {}'",
            tmux.socket.display(),
            pwned.display()
        ),
        &[],
    );
    assert!(!pwned.exists(), "the block reached tmux: {output}");
    let feedback = feedback.unwrap_or_else(|| panic!("the block failed: {output}"));
    assert!(feedback.contains("Permission denied"), "{feedback}");
    assert!(
        feedback.contains("Unix sockets outside the work dir")
            && feedback.contains("allow_sockets"),
        "the model is told why: {feedback}"
    );
}

#[test]
fn abstract_sockets_and_unix_datagrams_are_refused() {
    supervised_here();
    let sb = Sandbox::new();
    let name = unique_name("abstract");
    let address = SocketAddr::from_abstract_name(name.as_bytes()).expect("an abstract name");
    let listener = Listener::at(&address, "abstract");
    assert_eq!(greeting_from(&address), "abstract");
    let before = listener.accepted();

    let code = format!(
        "{}\ntry:\n    socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)\n    print('datagram made')\nexcept OSError as e:\n    print('datagram errno', e.errno)",
        python_connects(&[&format!("\0{name}")])
    );
    let (output, _) = run_block(&sb, "python", &code, &[]);
    assert!(output.contains("refused errno 13"), "{output}");
    assert!(output.contains("datagram errno 13"), "{output}");
    assert_eq!(
        listener.accepted(),
        before,
        "the abstract listener was reached"
    );
}

#[test]
fn a_socket_in_the_work_dir_connects_and_exchanges_bytes() {
    supervised_here();
    let sb = Sandbox::new();
    let work = sb.path("work");
    std::fs::create_dir_all(&work).expect("work dir");
    let listener = Listener::path(&work.join("inside.sock"), "inside");
    let absolute = work.join("inside.sock");
    let (output, _) = run_block(
        &sb,
        "python",
        &python_connects(&["inside.sock", &absolute.to_string_lossy()]),
        &[],
    );
    assert_eq!(
        output.matches("connected inside echo:hello").count(),
        2,
        "relative and absolute: {output}"
    );
    assert_eq!(listener.accepted(), 2);
}

#[test]
fn sockets_listed_in_allow_sockets_are_reachable_and_shown() {
    supervised_here();
    let sb = Sandbox::new();
    let outside = sb.path("outside");
    std::fs::create_dir_all(&outside).expect("outside dir");
    let listed = outside.join("listed.sock");
    let listener = Listener::path(&listed, "listed");
    let name = unique_name("allowed");
    let abstract_listener = Listener::at(
        &SocketAddr::from_abstract_name(name.as_bytes()).expect("an abstract name"),
        "abstract",
    );
    sb.write_config(&format!(
        "[exec]\nallow_sockets = [{:?}, \"@{name}\"]\n",
        listed.display().to_string()
    ));
    let (output, _) = run_block(
        &sb,
        "python",
        &python_connects(&[&listed.to_string_lossy(), &format!("\0{name}")]),
        &[],
    );
    assert!(output.contains("connected listed echo:hello"), "{output}");
    assert!(output.contains("connected abstract echo:hello"), "{output}");
    assert_eq!((listener.accepted(), abstract_listener.accepted()), (1, 1));

    let shown = sb.seek().arg("config").output().expect("seek config");
    let text = stdout(&shown);
    let line = text
        .lines()
        .find(|l| l.starts_with("allow_sockets"))
        .unwrap_or_default();
    assert!(
        line.contains(&format!("{:?}", listed.display().to_string()))
            && line.contains(&format!("\"@{name}\"")),
        "{text}"
    );
}

#[test]
fn links_and_dot_dot_out_of_the_work_dir_are_refused() {
    supervised_here();
    let sb = Sandbox::new();
    let outside = sb.path("outside");
    let work = sb.path("work");
    std::fs::create_dir_all(&outside).expect("outside dir");
    std::fs::create_dir_all(&work).expect("work dir");
    let target = outside.join("daemon.sock");
    let listener = Listener::path(&target, "outside");
    assert_eq!(
        greeting_from(&SocketAddr::from_pathname(&target).expect("path")),
        "outside"
    );
    let before = listener.accepted();
    std::os::unix::fs::symlink(&target, work.join("link.sock")).expect("symlink");
    std::os::unix::fs::symlink(&outside, work.join("linked-dir")).expect("symlink");
    let (output, _) = run_block(
        &sb,
        "python",
        &python_connects(&[
            "link.sock",
            "linked-dir/daemon.sock",
            "../outside/daemon.sock",
            &target.to_string_lossy(),
        ]),
        &[],
    );
    assert_eq!(output.matches("refused errno 13").count(), 4, "{output}");
    assert_eq!(
        listener.accepted(),
        before,
        "the outside socket was reached"
    );
}

#[test]
fn tcp_and_socket_pairs_keep_working() {
    supervised_here();
    let sb = Sandbox::new();
    let tcp = std::net::TcpListener::bind("127.0.0.1:0").expect("loopback");
    let port = tcp.local_addr().expect("port").port();
    std::thread::spawn(move || {
        for stream in tcp.incoming() {
            let Ok(mut stream) = stream else { continue };
            std::thread::spawn(move || {
                let mut line = String::new();
                if BufReader::new(&stream).read_line(&mut line).is_ok() {
                    let _ = write!(stream, "echo:{line}");
                }
            });
        }
    });
    let code = format!(
        r#"import errno, select, socket
def exchange(s):
    s.sendall(b"ping\n")
    return s.makefile().readline().strip()
s = socket.create_connection(("127.0.0.1", {port}))
print("blocking", exchange(s))
n = socket.socket()
n.setblocking(False)
started = n.connect_ex(("127.0.0.1", {port}))
select.select([], [n], [], 30)
print("nonblocking", started in (0, errno.EINPROGRESS), n.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR))
n.setblocking(True)
print("nonblocking", exchange(n))
closed = socket.socket()
closed.bind(("127.0.0.1", 0))
try:
    socket.create_connection(closed.getsockname())
except OSError as e:
    print("closed port errno", e.errno)
a, b = socket.socketpair()
a.sendall(b"pair")
print("socketpair", b.recv(4).decode())
server = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
server.bind(("127.0.0.1", 0))
client = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
client.connect(server.getsockname())
client.send(b"datagram")
print("udp", server.recv(8).decode())"#
    );
    let (output, _) = run_block(&sb, "python", &code, &[]);
    for expected in [
        "blocking echo:ping",
        "nonblocking True 0",
        "nonblocking echo:ping",
        "closed port errno 111",
        "socketpair pair",
        "udp datagram",
    ] {
        assert!(output.contains(expected), "{expected}: {output}");
    }
}

/// A connect that blocks (a listener in the work dir whose queue is full and which never accepts)
/// does not hold up the block's other connects: each call is answered on a thread of its own.
#[test]
fn a_connect_that_blocks_does_not_hold_up_the_others() {
    supervised_here();
    let sb = Sandbox::new();
    // Were the second connect stuck behind the first, the block would end at this timeout.
    sb.write_config("[tools.python]\ntimeout_secs = 60\n");
    let tcp = std::net::TcpListener::bind("127.0.0.1:0").expect("loopback");
    let port = tcp.local_addr().expect("port").port();
    let code = format!(
        r#"import socket, threading, time
listener = socket.socket(socket.AF_UNIX)
listener.bind("slow.sock")
listener.listen(0)
fillers = []
while True:
    filler = socket.socket(socket.AF_UNIX)
    filler.setblocking(False)
    fillers.append(filler)
    try:
        filler.connect("slow.sock")
    except BlockingIOError:
        break
blocked = socket.socket(socket.AF_UNIX)
thread = threading.Thread(target=lambda: blocked.connect("slow.sock"), daemon=True)
thread.start()
# Wait (bounded) until that thread is inside connect.
deadline = time.monotonic() + 20
while time.monotonic() < deadline:
    with open(f"/proc/self/task/{{thread.native_id}}/syscall") as f:
        if f.read().split()[0] == "{connect}":
            break
print("first connect waiting", thread.is_alive())
started = time.monotonic()
socket.create_connection(("127.0.0.1", {port}))
print("second connect done", time.monotonic() - started < 20)"#,
        connect = libc::SYS_connect,
    );
    let (output, feedback) = run_block(&sb, "python", &code, &[]);
    assert!(feedback.is_none(), "{output}");
    assert!(output.contains("first connect waiting True"), "{output}");
    assert!(output.contains("second connect done True"), "{output}");
    drop(tcp);
}

/// Go dials with non-blocking sockets from many goroutines while its runtime interrupts threads
/// with signals (preemption): every connect goes through the supervisor and all succeed.
#[test]
fn go_programs_dial_concurrently() {
    supervised_here();
    let sb = Sandbox::new();
    let (output, feedback) = run_block(&sb, "go", GO_DIALS, &[]);
    assert!(feedback.is_none(), "{output}");
    assert!(output.contains("dialed 300 failed 0"), "{output}");
}

const GO_DIALS: &str = r#"package main

import (
	"bufio"
	"fmt"
	"net"
	"sync"
)

func main() {
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	go func() {
		for {
			conn, err := listener.Accept()
			if err != nil {
				return
			}
			go func(c net.Conn) {
				line, _ := bufio.NewReader(c).ReadString('\n')
				c.Write([]byte(line))
				c.Close()
			}(conn)
		}
	}()
	var wg sync.WaitGroup
	var mu sync.Mutex
	dialed, failed := 0, 0
	for i := 0; i < 300; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			conn, err := net.Dial("tcp", listener.Addr().String())
			ok := err == nil
			if ok {
				conn.Write([]byte("x\n"))
				_, err = bufio.NewReader(conn).ReadString('\n')
				ok = err == nil
				conn.Close()
			}
			mu.Lock()
			if ok {
				dialed++
			} else {
				failed++
				fmt.Println(err)
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	fmt.Println("dialed", dialed, "failed", failed)
}"#;

/// One thread flips the address between an allowed socket and an outside one as fast as it can
/// while another connects in a loop: the supervisor reads the address once and connects to what
/// it checked, so the outside listener is never reached, however the race falls. (A supervisor
/// that checked and then let the kernel read the address again would be caught here.)
#[test]
fn a_racing_thread_cannot_swap_the_address_during_the_check() {
    supervised_here();
    let sb = Sandbox::new();
    let work = sb.path("work");
    // As long as "work": the two paths differ in one byte, so every flip is a single store and
    // the address is always one of the two, never a torn mixture.
    let outside = sb.path("wark");
    std::fs::create_dir_all(&work).expect("work dir");
    std::fs::create_dir_all(&outside).expect("outside dir");
    let inside_path = work.join("in.sock");
    let outside_path = outside.join("in.sock");
    let inside = Listener::path(&inside_path, "inside");
    let escaped = Listener::path(&outside_path, "OUTSIDE");
    let code = RACE
        .replace("INSIDE_PATH", &inside_path.to_string_lossy())
        .replace("OUTSIDE_PATH", &outside_path.to_string_lossy());
    let (output, _) = run_block(&sb, "c", &code, &[]);
    assert_eq!(escaped.accepted(), 0, "a connect escaped: {output}");
    assert!(output.contains("outside=0 "), "{output}");
    // Both states of the address were seen: the race really ran.
    assert!(output.contains("raced=yes"), "{output}");
    assert!(inside.accepted() >= 200, "{output}");
}

/// The racing C block: stops once both outcomes were seen 200 times (or after 50,000 attempts).
const RACE: &str = r#"#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

static struct sockaddr_un address;
static atomic_int done;
static const char *inside = "INSIDE_PATH";
static const char *outside = "OUTSIDE_PATH";
static size_t differing;

static void *flip(void *unused) {
    (void)unused;
    volatile char *byte = &address.sun_path[differing];
    while (!atomic_load(&done)) {
        *byte = outside[differing];
        *byte = inside[differing];
    }
    return NULL;
}

int main(void) {
    while (inside[differing] == outside[differing]) differing++;
    address.sun_family = AF_UNIX;
    strcpy(address.sun_path, inside);
    pthread_t flipper;
    pthread_create(&flipper, NULL, flip, NULL);
    int in = 0, out = 0, refused = 0, other = 0;
    for (int i = 0; i < 50000 && (in < 200 || refused < 200); i++) {
        int s = socket(AF_UNIX, SOCK_STREAM, 0);
        if (connect(s, (struct sockaddr *)&address, sizeof address) == 0) {
            char greeting[16] = {0};
            if (read(s, greeting, sizeof greeting - 1) > 0 && greeting[0] == 'O') out++;
            else in++;
        } else if (errno == EACCES) {
            refused++;
        } else {
            other++;
        }
        close(s);
    }
    atomic_store(&done, 1);
    pthread_join(flipper, NULL);
    printf("inside=%d outside=%d refused=%d other=%d raced=%s\n", in, out, refused, other,
           in >= 200 && refused >= 200 ? "yes" : "no");
    return 0;
}"#;

#[test]
fn sandbox_off_installs_nothing() {
    let sb = Sandbox::new();
    let outside = sb.path("outside");
    std::fs::create_dir_all(&outside).expect("outside dir");
    let target = outside.join("daemon.sock");
    let listener = Listener::path(&target, "outside");
    let (output, _) = run_block(
        &sb,
        "python",
        &python_connects(&[&target.to_string_lossy()]),
        &["--sandbox", "off", "-y"],
    );
    assert!(output.contains("connected outside echo:hello"), "{output}");
    assert_eq!(listener.accepted(), 1);
}
