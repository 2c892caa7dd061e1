//! `agentsim mcp --http ADDR`: the sessions of a run of many (`sessions:` in
//! the scenario), each served to an MCP client of its own over the Streamable
//! HTTP transport (MCP 2025-06-18, "Transports"), all in one world on one
//! virtual clock.
//!
//! The engine runs the whole run once, sequentially, in a worker thread
//! ([`Prepared::run_each`]), with a [`Bridge`] per session as its planner; each
//! bridge relays over channels of its own to the [`Client`] of the k-th MCP
//! session to `initialize` (session k). When the engine needs session k's next
//! action it waits for client k's next `tools/call`, whose HTTP response is
//! written only once the engine has answered it; a client whose session has
//! not arrived yet (in virtual time) waits in its first call or `prompts/get`.
//! A session whose client says nothing for `client_wait` (wall clock) ends as
//! a stdio session whose stdin closed: its planner finishes. So the run
//! depends only on each session's sequence of calls, never on wall-clock order
//! between clients, and it replays without them.

use std::collections::BTreeMap;
use std::hash::{BuildHasher, Hasher};
use std::io::{self, Stderr};
use std::net::TcpListener;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use agentsim_agents::{PlannerSpec, StackSpec};
use agentsim_engine::{SessionId, StreamSource, Trajectory};
use agentsim_runner::bridge::{Bridge, Command, Observation, Relay};
use agentsim_worlds::Prepared;
use serde_json::Value as Json;

use crate::client::{self, Channels, Client};
use crate::http::{Connection, Limits, Next, Request, Response};
use crate::{Ending, INVALID_REQUEST, Options, PARSE_ERROR, PROTOCOL_VERSIONS};

/// The header that names a client's session.
pub const SESSION_HEADER: &str = "Mcp-Session-Id";

/// The endpoint's path.
pub const ENDPOINT: &str = "/mcp";

/// How often waiting loops look at the stop flag and the run's end.
const POLL_MS: u64 = 20;

/// Once the run is judged (and its files written), how long connections still
/// being answered get to finish before their sockets are shut: the last
/// answers (a session ended) usually go out in milliseconds, and no client
/// can keep the server from exiting past this.
pub const CLOSE_GRACE_MS: u64 = 2_000;

/// How the HTTP transport runs, besides [`Options`].
#[derive(Clone, Debug)]
pub struct HttpOptions {
    /// How long the engine waits (wall clock) for a session's client to send
    /// its next call before it ends that session, in ms.
    pub client_wait_ms: u64,
    /// Bounds on one request.
    pub limits: Limits,
    /// Connections served at once; more are refused with 503.
    pub connections_max: usize,
}

impl HttpOptions {
    /// A minute's wait for a client, `body_bytes_max` bodies, 64 connections.
    pub fn new(body_bytes_max: usize) -> Self {
        Self { client_wait_ms: 60_000, limits: Limits::new(body_bytes_max), connections_max: 64 }
    }
}

/// The two ends of one session's channels: the bridge's and the client's.
struct Ends {
    bridge: Option<(Sender<Observation>, Receiver<Command>)>,
    client: Option<Channels>,
}

/// Where the engine and the clients meet: each session's channels, made by
/// whichever side comes first (the engine reaching the session, or its client
/// initializing) and dropped once both took theirs, or when the run is over.
#[derive(Default)]
struct Rendezvous {
    ends: Mutex<BTreeMap<SessionId, Ends>>,
}

impl Rendezvous {
    fn with<T>(&self, session: SessionId, take: impl FnOnce(&mut Ends) -> Option<T>) -> Option<T> {
        let mut ends = self.ends.lock().ok()?;
        let entry = ends.entry(session).or_insert_with(|| {
            let (to_server, from_agent) = mpsc::channel();
            let (to_agent, from_server) = mpsc::channel();
            Ends { bridge: Some((to_server, from_server)), client: Some(Channels { to_agent, from_agent }) }
        });
        let taken = take(entry);
        if entry.bridge.is_none() && entry.client.is_none() {
            ends.remove(&session);
        }
        taken
    }

    /// The run is over: every end not taken is dropped, so a client waiting
    /// for a session that never came learns that it has ended.
    fn close(&self) {
        if let Ok(mut ends) = self.ends.lock() {
            ends.clear();
        }
    }
}

/// Which sessions have a client (the first `claimed`, in order), and when a
/// client last initialized (at first, when the server started).
struct Claims {
    state: Mutex<(u32, Instant)>,
}

impl Claims {
    fn new() -> Self {
        Self { state: Mutex::new((0, Instant::now())) }
    }

    /// Whether `session` has a client, and when a client last initialized.
    fn of(&self, session: SessionId) -> (bool, Instant) {
        let state = self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        (session < state.0, state.1)
    }

    /// The next session for a client, while the run has one (of `count`).
    fn claim(&self, count: u32) -> Option<SessionId> {
        let mut state = self.state.lock().ok()?;
        (state.0 < count).then(|| {
            *state = (state.0 + 1, Instant::now());
            state.0 - 1
        })
    }
}

/// The bridge's relay: hands the observation to the client and waits for its
/// command, at most `wait` (or until the server stops).
struct Waiting {
    session: SessionId,
    to_server: Sender<Observation>,
    from_server: Receiver<Command>,
    wait: Duration,
    stopping: Arc<AtomicBool>,
    claims: Arc<Claims>,
}

impl Waiting {
    /// How long the client of this session has had to answer, from `asked`
    /// (the observation handed over): a client that initialized is waited
    /// for from then (or from its `initialize`, if that came later); a
    /// session no client has initialized, from the last time any client did
    /// (or the server started). So sessions whose client never comes are
    /// waited for together, one `wait` in all rather than one each, while a
    /// client still arriving restarts the wait. `None` when there is time left.
    /// `claimed_seen` keeps when a client was first seen to have a session that
    /// had none at `asked` (read in the same look as `claimed`, so a client
    /// initializing between two looks is never timed from `asked`).
    fn expired(&self, asked: Instant, unclaimed_at_ask: bool, claimed_seen: &mut Option<Instant>) -> Option<Command> {
        let (claimed, last_claim) = self.claims.of(self.session);
        if claimed && unclaimed_at_ask && claimed_seen.is_none() {
            *claimed_seen = Some(Instant::now());
        }
        let since = match (claimed, *claimed_seen) {
            (true, Some(at)) => at,
            (true, None) => asked,
            (false, _) => last_claim,
        };
        if since.elapsed() < self.wait {
            return None;
        }
        let (session, waited_ms) = (self.session, self.wait.as_millis());
        if claimed {
            eprintln!(
                "agentsim mcp: session {session}: no call from its client within {waited_ms} ms; ending the session"
            );
            Some(Command::Finish)
        } else {
            eprintln!(
                "agentsim mcp: session {session}: no client came (none initialized within {waited_ms} ms of the last \
                 one); the session is absent"
            );
            Some(Command::Absent)
        }
    }
}

impl Relay for Waiting {
    fn exchange(&mut self, observation: Observation) -> Option<Command> {
        self.to_server.send(observation).ok()?;
        let asked = Instant::now();
        let unclaimed_at_ask = !self.claims.of(self.session).0;
        let mut claimed_seen = None;
        loop {
            if self.stopping.load(Ordering::SeqCst) {
                // Stopped by a signal: a session no client came for is still absent.
                return (!self.claims.of(self.session).0).then_some(Command::Absent);
            }
            if let Some(ending) = self.expired(asked, unclaimed_at_ask, &mut claimed_seen) {
                return Some(ending);
            }
            match self.from_server.recv_timeout(Duration::from_millis(POLL_MS)) {
                Ok(command) => return Some(command),
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => return None,
            }
        }
    }
}

/// One session's client, shared by the connections its requests come on.
type Shared<'a> = Arc<Mutex<Client<'a, Stderr>>>;

/// Everything the connections share.
struct Server<'a> {
    prepared: &'a Prepared,
    options: &'a Options,
    http: &'a HttpOptions,
    rendezvous: Arc<Rendezvous>,
    /// The sessions of the run.
    count: u32,
    /// Clients by session id (in a `BTreeMap`: nothing here depends on hash order).
    clients: Mutex<BTreeMap<String, (SessionId, Shared<'a>)>>,
    /// Sessions handed to a client so far, shared with the relays.
    claims: Arc<Claims>,
    /// Set when the run is over or the server is stopped: connections end.
    closing: AtomicBool,
    /// Connections being served.
    connections: AtomicUsize,
    /// A handle on each connection being served (by a number of its own), to
    /// shut it down when the run is over.
    sockets: Mutex<BTreeMap<u64, std::net::TcpStream>>,
    /// Numbers the connections.
    accepted: AtomicU64,
    /// Makes session ids hard to guess.
    ids: std::collections::hash_map::RandomState,
}

/// Serves the run of `prepared` at `options.seed` on `listener` until every
/// session has ended (or `ending.stop` is set, which ends them all as closed
/// stdins do), and returns the judged trajectory of the whole run. The
/// trajectory goes to `ending.judged` the moment the run is judged, before any
/// connection is waited for: then connections get [`CLOSE_GRACE_MS`] to finish
/// their answers (less if `stop` is set) and are shut down, so a client that
/// reads slowly or not at all neither loses the run nor holds the server.
pub fn serve_http(
    prepared: &Prepared,
    options: &Options,
    http: &HttpOptions,
    listener: TcpListener,
    ending: Ending<'_>,
) -> io::Result<Trajectory> {
    let stop = ending.stop;
    listener.set_nonblocking(true)?;
    let stopping = Arc::new(AtomicBool::new(false));
    let server = Server {
        prepared,
        options,
        http,
        rendezvous: Arc::new(Rendezvous::default()),
        count: prepared.scenario.sessions.count,
        clients: Mutex::new(BTreeMap::new()),
        claims: Arc::new(Claims::new()),
        closing: AtomicBool::new(false),
        connections: AtomicUsize::new(0),
        sockets: Mutex::new(BTreeMap::new()),
        accepted: AtomicU64::new(0),
        ids: std::collections::hash_map::RandomState::new(),
    };
    std::thread::scope(|scope| {
        let worker = scope.spawn(|| {
            let trajectory = run(&server, &stopping);
            server.close();
            trajectory
        });
        while !worker.is_finished() {
            if stop.load(Ordering::SeqCst) && !stopping.swap(true, Ordering::SeqCst) {
                eprintln!("agentsim mcp: interrupted (SIGTERM or SIGINT); ending every session");
            }
            match listener.accept() {
                Ok((stream, _)) => server.accept(scope, stream),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => std::thread::sleep(Duration::from_millis(POLL_MS)),
                Err(e) => {
                    eprintln!("agentsim mcp: cannot accept a connection ({e})");
                    std::thread::sleep(Duration::from_millis(POLL_MS));
                }
            }
        }
        // Also when the run panicked: no connection may wait for it.
        server.close();
        let trajectory = worker.join().map_err(|_| io::Error::other("the simulation thread panicked"))?;
        (ending.judged)(&trajectory);
        server.shut_down(stop);
        Ok(trajectory)
    })
}

/// The run, with a bridge per session relaying to its client.
fn run(server: &Server<'_>, stopping: &Arc<AtomicBool>) -> Trajectory {
    let prepared = server.prepared;
    let options = server.options;
    let config = prepared.scenario.sim_config(true, options.fault_scale);
    let messaging = prepared.catalog.id("send_message");
    // Each client is a planner; the layers, if any, stand between it and the tools.
    let layers = StackSpec { planner: PlannerSpec::Oracle, layers: options.layers.clone() };
    let wait = Duration::from_millis(server.http.client_wait_ms);
    // Sessions' agents are made in order of arrival, so a count names them
    // (a stream source's session may be another run's, `drawn_as`).
    let made = std::cell::Cell::new(0);
    let make = |_expert, streams: &StreamSource| {
        let session = made.replace(made.get() + 1);
        let (to_server, from_server) =
            server.rendezvous.with(session, |ends| ends.bridge.take()).expect("each session's bridge is made once");
        let claims = Arc::clone(&server.claims);
        let relay = Waiting { session, to_server, from_server, wait, stopping: Arc::clone(stopping), claims };
        let bridge = Bridge::relayed(Box::new(relay), messaging, options.reply_wait_ms);
        layers.wrap(Box::new(bridge), streams)
    };
    prepared.run_each(options.seed, 0, false, &config, &make)
}

impl<'a> Server<'a> {
    /// The run is over: clients waiting for a session learn that it ended,
    /// and connections close once their request is answered.
    fn close(&self) {
        self.rendezvous.close();
        self.closing.store(true, Ordering::SeqCst);
    }

    /// The run is judged: connections get [`CLOSE_GRACE_MS`] (until `stop`)
    /// to finish what they are writing, then every socket still open is shut
    /// down, which ends its reads and writes at once.
    fn shut_down(&self, stop: &AtomicBool) {
        let grace_end = Instant::now() + Duration::from_millis(CLOSE_GRACE_MS);
        while self.connections.load(Ordering::SeqCst) > 0 && Instant::now() < grace_end && !stop.load(Ordering::SeqCst)
        {
            std::thread::sleep(Duration::from_millis(POLL_MS));
        }
        if let Ok(sockets) = self.sockets.lock() {
            for socket in sockets.values() {
                let _ = socket.shutdown(std::net::Shutdown::Both);
            }
        }
    }

    /// Serves a new connection on a thread of its own, or refuses it when
    /// too many are open.
    fn accept<'s>(&'s self, scope: &'s std::thread::Scope<'s, '_>, stream: std::net::TcpStream) {
        let Ok(mut connection) = Connection::new(stream) else { return };
        if self.connections.fetch_add(1, Ordering::SeqCst) >= self.http.connections_max {
            self.connections.fetch_sub(1, Ordering::SeqCst);
            let busy = Response::new(503, "text/plain", "too many connections\n");
            let _ = connection.write(&busy, true, &self.http.limits);
            return;
        }
        let number = self.accepted.fetch_add(1, Ordering::SeqCst);
        if let (Ok(handle), Ok(mut sockets)) = (connection.handle(), self.sockets.lock()) {
            sockets.insert(number, handle);
        }
        scope.spawn(move || {
            self.serve_connection(connection);
            if let Ok(mut sockets) = self.sockets.lock() {
                sockets.remove(&number);
            }
            self.connections.fetch_sub(1, Ordering::SeqCst);
        });
    }

    /// Answers the requests of one connection in turn until it closes.
    fn serve_connection(&self, mut connection: Connection) {
        loop {
            let request = match connection.next(&self.http.limits, &self.closing) {
                Next::Request(request) => request,
                Next::Refused(refusal) => {
                    let body = client::error(Json::Null, INVALID_REQUEST, refusal.reason);
                    let _ = connection.write(&json_response(refusal.status, &body), true, &self.http.limits);
                    connection.close_gracefully();
                    return;
                }
                Next::Closed => return,
            };
            let close = request.close || self.closing.load(Ordering::SeqCst);
            let (response, answered) = self.route(&request);
            let written = connection.write(&response, close, &self.http.limits);
            if let Some(client) = answered {
                match &written {
                    Ok(()) => lock(&client).answered(),
                    Err(e) => eprintln!("agentsim mcp: a client went away before its answer ({e})"),
                }
            }
            if close || written.is_err() {
                return;
            }
        }
    }

    /// The response to one request, and the client it was for.
    fn route(&self, request: &Request) -> (Response, Option<Shared<'a>>) {
        if request.path != ENDPOINT {
            let body = format!("not found: the MCP endpoint is {ENDPOINT}\n");
            return (Response::new(404, "text/plain", body), None);
        }
        if let Some(refusal) = check_origin(request).or_else(|| check_version(request)) {
            return (refusal, None);
        }
        match request.method.as_str() {
            "POST" => self.post(request),
            "DELETE" => (self.delete(request), None),
            _ => {
                let refusal = error_response(405, "this endpoint takes POST (messages) and DELETE (end the session)");
                (refusal.with("Allow", "POST, DELETE"), None)
            }
        }
    }

    fn post(&self, request: &Request) -> (Response, Option<Shared<'a>>) {
        if let Some(refusal) = check_media(request) {
            return (refusal, None);
        }
        let client = match request.header(&SESSION_HEADER.to_ascii_lowercase()) {
            Some(id) => match self.client(id) {
                Some(client) => client,
                None => return (unknown_session(id), None),
            },
            None if client::is_initialize(&request.body) => return self.initialize(request),
            None if serde_json::from_slice::<Json>(&request.body).is_err() => {
                return (json_response(400, &client::error(Json::Null, PARSE_ERROR, "not JSON")), None);
            }
            None => {
                let reason = format!("missing the {SESSION_HEADER} header: send `initialize` first");
                return (error_response(400, &reason), None);
            }
        };
        let response = answer(&client, request);
        (response, Some(client))
    }

    /// Opens the next session for an `initialize` without a session id; one
    /// refused (bad `params`) takes none.
    fn initialize(&self, request: &Request) -> (Response, Option<Shared<'a>>) {
        if let Some(refusal) = client::initialize_refusal(&request.body) {
            return (json_response(200, &refusal), None);
        }
        let Some(session) = self.claim() else {
            let reason = format!("all {} sessions of the run have a client (or the run is over)", self.count);
            return (error_response(409, &reason), None);
        };
        let Some(channels) = self.rendezvous.with(session, |ends| ends.client.take()) else {
            return (error_response(409, "the run is over"), None);
        };
        let label = format!("agentsim mcp: session {session}: ");
        let client = Arc::new(Mutex::new(Client::new(self.prepared, self.options, channels, io::stderr(), label)));
        let id = session_id(&self.ids, session);
        if let Ok(mut clients) = self.clients.lock() {
            clients.insert(id.clone(), (session, Arc::clone(&client)));
        }
        eprintln!("agentsim mcp: session {session}: a client initialized");
        let response = answer(&client, request).with(SESSION_HEADER, id);
        (response, Some(client))
    }

    /// The next session for a client, while the run has one.
    fn claim(&self) -> Option<SessionId> {
        if self.closing.load(Ordering::SeqCst) {
            return None;
        }
        self.claims.claim(self.count)
    }

    fn client(&self, id: &str) -> Option<Shared<'a>> {
        self.clients.lock().ok()?.get(id).map(|(_, client)| Arc::clone(client))
    }

    /// DELETE: the client ends its session, as a stdio client closing stdin.
    fn delete(&self, request: &Request) -> Response {
        let Some(id) = request.header(&SESSION_HEADER.to_ascii_lowercase()) else {
            return error_response(400, &format!("missing the {SESSION_HEADER} header"));
        };
        let removed = self.clients.lock().ok().and_then(|mut clients| clients.remove(id));
        let Some((session, client)) = removed else { return unknown_session(id) };
        // Said before the planner hears it: the run may end (and print its
        // verdict) the moment it does.
        eprintln!("agentsim mcp: session {session}: the client ended its session");
        lock(&client).finish();
        Response::empty(200)
    }
}

fn lock<'c, 'a>(client: &'c Shared<'a>) -> std::sync::MutexGuard<'c, Client<'a, Stderr>> {
    // A panic while holding the lock is a bug that aborts the CLI; the state
    // of a client is still whole between two requests.
    client.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The client's answer to one message: JSON, or an event stream when a
/// `list_changed` notification goes with it and the client accepts one; 202
/// for a notification or a response.
fn answer(client: &Shared<'_>, request: &Request) -> Response {
    let mut client = lock(client);
    let response = client.handle(&request.body);
    let notification = client.take_list_changed();
    let streams = request.header("accept").is_some_and(|a| a.contains("text/event-stream"));
    match (response, notification) {
        (None, _) => Response::empty(202),
        // A message the server could not take at all (not JSON, not JSON-RPC):
        // an HTTP error with the JSON-RPC error (which has no id) as its body.
        (Some(response), _) if response["id"].is_null() => json_response(400, &response),
        (Some(response), Some(notification)) if streams => {
            let events = format!("event: message\ndata: {notification}\n\nevent: message\ndata: {response}\n\n");
            Response::new(200, "text/event-stream", events)
        }
        (Some(response), _) => json_response(200, &response),
    }
}

/// Refuses a request from a web page of another host (the spec's guard
/// against DNS rebinding): an `Origin` header, when there is one, must name a
/// loopback host.
fn check_origin(request: &Request) -> Option<Response> {
    let origin = request.header("origin")?;
    let host = origin.split("://").nth(1).unwrap_or(origin);
    let host = match host.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or_default(),
        None => host.split([':', '/']).next().unwrap_or_default(),
    };
    let loopback = matches!(host, "localhost" | "127.0.0.1" | "::1");
    (!loopback).then(|| error_response(403, &format!("Origin `{origin}` is not a loopback host")))
}

/// Refuses an `MCP-Protocol-Version` header naming a version this server
/// does not speak; a missing one is accepted (the spec's default).
fn check_version(request: &Request) -> Option<Response> {
    let version = request.header("mcp-protocol-version")?;
    // 2025-03-26 is what the spec assumes of a client that sends no header.
    let known = PROTOCOL_VERSIONS.contains(&version) || version == "2025-03-26";
    (!known).then(|| {
        let speaks = PROTOCOL_VERSIONS.join(", ");
        error_response(400, &format!("unsupported MCP-Protocol-Version `{version}` (this server speaks {speaks})"))
    })
}

/// Refuses a body that says it is not JSON, or a client that accepts neither
/// JSON nor an event stream; a missing header is accepted.
fn check_media(request: &Request) -> Option<Response> {
    if let Some(kind) = request.header("content-type")
        && !kind.to_ascii_lowercase().contains("json")
    {
        return Some(error_response(415, &format!("Content-Type must be application/json, found `{kind}`")));
    }
    let accept = request.header("accept")?.to_ascii_lowercase();
    let acceptable = ["application/json", "text/event-stream", "*/*", "application/*"];
    (!acceptable.iter().any(|a| accept.contains(a))).then(|| {
        error_response(406, &format!("Accept must allow application/json or text/event-stream, found `{accept}`"))
    })
}

/// A session id: visible ASCII, unique, and not guessable from another.
fn session_id(ids: &std::collections::hash_map::RandomState, session: SessionId) -> String {
    let mut hasher = ids.build_hasher();
    hasher.write_u32(session);
    let high = hasher.finish();
    hasher.write_u64(high);
    format!("s{session}-{high:016x}{:016x}", hasher.finish())
}

fn unknown_session(id: &str) -> Response {
    let shown: String = id.chars().take(80).collect();
    error_response(404, &format!("no session `{shown}`: it ended or never existed; send `initialize` for a new one"))
}

fn error_response(status: u16, reason: &str) -> Response {
    json_response(status, &client::error(Json::Null, INVALID_REQUEST, reason))
}

fn json_response(status: u16, body: &Json) -> Response {
    Response::new(status, "application/json", body.to_string())
}

/// The address line the server prints on stderr once it listens: a script
/// reads the URL from it.
pub fn serving_line(count: u32, address: std::net::SocketAddr) -> String {
    let sessions = if count == 1 { "1 session".to_string() } else { format!("{count} sessions") };
    format!("agentsim mcp: serving {sessions} at http://{address}{ENDPOINT}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_ids_differ_and_say_their_session() {
        let ids = std::collections::hash_map::RandomState::new();
        let (a, b) = (session_id(&ids, 0), session_id(&ids, 1));
        assert!(a.starts_with("s0-") && b.starts_with("s1-") && a.len() == 35, "{a} {b}");
        assert!(a.bytes().all(|c| c.is_ascii_graphic()));
        let line = serving_line(2, "127.0.0.1:80".parse().unwrap());
        assert_eq!(line, "agentsim mcp: serving 2 sessions at http://127.0.0.1:80/mcp");
    }
}
