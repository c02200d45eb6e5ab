// herdr-pi probe: a Pi extension that `herdr-pi wrap` writes into its
// private run directory and passes to an interactive Pi with -e.
//
// It tells the wrapper what happens inside Pi (lifecycle events and a few
// inter-extension bus channels) over the wrapper's control socket, and,
// inside a complete Herdr environment, it asks the model to end a reply
// with the :input_needed: marker when it cannot go on without the user,
// and hides that marker from Pi's screen.
//
// Rules it lives by:
// - Loading never throws: an extension that throws at load makes Pi exit 1
//   at start-up. Every entry point is wrapped, every API is feature-tested
//   (Pi 0.73.1 has no ctx.mode, no agent_settled, no Markdown transformers).
// - Pi never waits for the wrapper: writes are fire-and-forget, a missing or
//   dead socket only means the wrapper falls back to the session file and
//   the screen.
// - Only the root interactive session speaks; a stale instance (after
//   /reload or a session switch) goes quiet.

import { readFileSync, realpathSync, statSync } from "node:fs";
import { createConnection } from "node:net";
import { homedir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

import { setupHandoff } from "./herdr-pi-handoff.mjs";

const MARKER = ":input_needed:";
// The exact guidance of the sentinel integration (291 bytes; its SHA-256 is
// checked by the Go tests).
const INSTRUCTION =
	"<herdr_integration>\n" +
	"When you cannot continue until you receive a response, end your final response with :input_needed: on a line by itself.\n" +
	"Use the marker only when a response is required to continue. Do not use it for optional questions, suggestions, or completed work.\n" +
	"</herdr_integration>";

const BUS_CHANNELS = [
	"pi:waiting-for-user-input",
	"herdr:blocked",
	"@eko24ive/pi-ask:started",
	"@eko24ive/pi-ask:completed",
	"permissions:ui_prompt",
	"permissions:decision",
	"permissions:forwarded_decision",
];

// Longer strings in forwarded payloads are cut to the first of these that
// lets the line fit; the later ones are for payloads with many long
// strings, which must still arrive with their ids and flags.
const STRING_CAPS = [2000, 200, 20];
// In UTF-8 bytes, as the wrapper counts its 64 KiB line limit: a line of
// 60000 JavaScript characters can be three times that many bytes.
const MAX_LINE = 60000;
const MAX_BACKLOG = 1 << 20; // unsent bytes before events are dropped
const MAX_REDIALS = 5; // reconnections on the probe's own without an answer
// Channel events kept for the wrapper while it cannot take them: at most
// this many, and about MAX_BACKLOG characters; the oldest go first.
const MAX_KEPT = 128;

// State shared by every instance of this module in one Pi process: Pi
// re-imports the module on /reload and on session switches, but the socket
// and the notion of "the current root instance" must survive that.
//
// What a new connection must repeat (see resyncEvents): session() builds
// the current root session's session_start (null before the first and
// after a quit), running says a run started and has not settled, prompts
// are the dialogs open now, oldest first; compacting says Pi compacts the
// context now (outside a run); leaf() reads the session's leaf for a
// resync's agent_start (see leafOf). redials counts the reconnections
// made on the probe's own since the wrapper last answered one.
//
// The channel events (BUS_CHANNELS) cannot be repeated that way: the probe
// does not know what they mean. So those the wrapper may not have had are
// kept (see sendChannel) until a connection the wrapper answered (taken)
// carries them; written counts the first kept ones the connection carries
// already, before the answer. dropped counts those the bound threw away,
// which the wrapper is told of. channelSeq numbers the channel events
// this Pi process sent (the event line's seq): a connection can fail after
// the wrapper read what it carried but before the probe heard the answer,
// and the kept events it then writes again are known by their numbers and
// handled once. sessionSeq counts the root sessions started, so a resync
// says whether the session is the one the wrapper knows. behind: an event was dropped because the wrapper stopped reading;
// once it has read what is buffered, the connection resyncs. lastRun is how
// the session's latest run ended (its agent_end and agent_settled, and how
// many runs of the session have ended): a resync repeats it, since a run
// that ended while the wrapper was not listening is news it never heard;
// lastRunAt is when, by Pi's monotonic clock, that run ended (see
// lastRunNow); lastEnd is the current run's agent_end until it settles.
const SHARED_KEY = Symbol.for("herdr-pi.probe.v1");

// monotonicNow is Pi's monotonic clock in milliseconds (undefined when it
// cannot be read): a run's end is kept by it, so a resync can say how long
// ago the run ended whatever the wall clock did meanwhile.
function monotonicNow() {
	try {
		const t = globalThis.performance?.now();
		return typeof t === "number" && Number.isFinite(t) ? t : undefined;
	} catch {
		return undefined;
	}
}

// lastRunNow is lastRun as a resync says it now: with how long ago, in
// milliseconds, the run ended (endedMsAgo), so that the wrapper, which did
// not hear it end, counts its length to its end and not to the return.
function lastRunNow() {
	const now = monotonicNow();
	const at = shared.lastRunAt;
	if (typeof at !== "number" || now === undefined || now < at) return shared.lastRun;
	return { ...shared.lastRun, endedMsAgo: Math.round(now - at) };
}
const shared = (globalThis[SHARED_KEY] ??= {
	sock: null,
	retryAt: 0,
	connections: 0,
	redials: 0,
	lastGen: 0,
	rootGen: 0,
	notTui: false,
	session: null,
	leaf: null,
	settles: true,
	running: false,
	compacting: false,
	// compactedSinceEnd: a compaction began after the run's latest
	// agent_end (see cancelledRetry). compactionCancelled: the person
	// cancelled a compaction of the run's (Escape on "Auto-compacting...
	// (escape to cancel)"), and no model turn began since.
	compactedSinceEnd: false,
	compactionCancelled: false,
	prompts: [],
	sessionSeq: 0,
	lastEnd: null,
	lastRun: null,
	lastRunAt: undefined,
	runsEnded: 0,
	taken: false,
	behind: false,
	kept: [],
	keptSize: 0,
	written: 0,
	dropped: 0,
	channelSeq: 0,
});

export function isHerdrEnv(env) {
	const blank = (v) => typeof v !== "string" || v.trim() === "";
	return env.HERDR_ENV === "1" && !blank(env.HERDR_SOCKET_PATH) && !blank(env.HERDR_PANE_ID);
}

export function appendInstruction(systemPrompt) {
	if (typeof systemPrompt !== "string" || systemPrompt === "") return INSTRUCTION;
	if (systemPrompt.includes(INSTRUCTION)) return systemPrompt;
	return systemPrompt + "\n\n" + INSTRUCTION;
}

export function hasMarker(text) {
	if (typeof text !== "string") return false;
	const lines = text.trimEnd().split(/\r?\n/);
	return lines[lines.length - 1].trim() === MARKER;
}

// Display-only: drops a final marker line, and while streaming also a final
// line that is a beginning of the marker (":", ":in", …), so the marker
// never flashes on screen. Anything else is returned untouched.
export function stripMarker(text, streaming) {
	if (typeof text !== "string") return text;
	const lines = text.trimEnd().split(/\r?\n/);
	const last = lines[lines.length - 1].trim();
	const hide = last === MARKER || (streaming && last !== "" && MARKER.startsWith(last));
	if (!hide) return text;
	lines.pop();
	return lines.join("\n").trimEnd();
}

// The latest assistant entry on the branch, unless a user message came
// after it (then the question was answered: undefined).
export function lastUnanswered(branch) {
	if (!Array.isArray(branch)) return undefined;
	for (let i = branch.length - 1; i >= 0; i--) {
		const entry = branch[i];
		if (!entry || entry.type !== "message" || !entry.message) continue;
		const m = entry.message;
		if (m.role === "user") return undefined;
		if (m.role === "assistant") return entry;
	}
	return undefined;
}

// The text of the latest assistant message on the branch, unless a user
// message came after it (then the question was answered: "").
export function lastUnansweredText(branch) {
	const entry = lastUnanswered(branch);
	if (!entry) return "";
	const m = entry.message;
	if (typeof m.content === "string") return m.content;
	if (!Array.isArray(m.content)) return "";
	return m.content
		.filter((p) => p && p.type === "text" && typeof p.text === "string")
		.map((p) => p.text)
		.join("\n");
}

// A line that asks: it ends with a question mark (Latin, fullwidth or
// Arabic), maybe followed by closing quotes, brackets or Markdown emphasis.
const ASKS = /[?\uff1f\u061f]["'\u201d\u2019\u00bb)\]*_`]*$/u;

// The question a reply that ends with the marker asks, for the toast: the
// last line outside code that ends with a question mark; else the first
// line of the last paragraph (a code block ends one), where a reply that
// reported first puts its request; else the first line. Never the marker
// line; cut for the wire. The wrapper sanitises and shortens it again
// before anyone sees it.
export function questionOf(text) {
	if (!hasMarker(text)) return "";
	const lines = text.trimEnd().split(/\r?\n/);
	lines.pop();
	let fenced = false;
	let asked, opening, first;
	for (const raw of lines) {
		const line = raw.trim();
		if (line.startsWith("```") || line.startsWith("~~~")) {
			fenced = !fenced;
			opening = undefined;
			continue;
		}
		if (fenced) continue;
		if (line === "") {
			opening = undefined;
			continue;
		}
		if (first === undefined) first = line;
		if (opening === undefined) opening = line;
		if (ASKS.test(line)) asked = line;
	}
	return (asked ?? opening ?? first ?? "").slice(0, 500);
}

// retryCancelled says whether the branch ends in a retry the person
// cancelled: its last message is a reply that failed, and Pi left it out of
// what the model sees again (a context_edit with no replacement), which Pi
// 1.6.0 does when it schedules a retry — yet no retry followed. A final
// failure ("Retry failed after 3 attempts") is not left out, nor is a reply
// that failed without a retry; a retry that ran adds a reply after it. Pi
// tells extensions nothing of its retries, and pressing Escape on the
// countdown ("Retrying (1/3) in 2s... (escape to cancel)") ends the run
// with the failed reply's stop reason, error, and agent_settled.aborted
// false: this is how the wrapper tells it from a run that failed. (Pi also
// leaves out a reply that overflowed the context before it compacts; the
// caller rules that out.)
export function retryCancelled(branch) {
	if (!Array.isArray(branch)) return false;
	const omitted = new Set();
	for (let i = branch.length - 1; i >= 0; i--) {
		const entry = branch[i];
		if (!entry) continue;
		if (entry.type === "context_edit" && entry.replacement === null && typeof entry.targetId === "string") {
			omitted.add(entry.targetId);
			continue;
		}
		if (entry.type !== "message" || !entry.message) continue;
		const m = entry.message;
		return m.role === "assistant" && m.stopReason === "error" && omitted.has(entry.id);
	}
	return false;
}

// sessionNameOf is the session's display name (Pi's /name), which the
// wrapper's notifications end their body with, as pi-notify's do; "" when
// the session has none or this Pi cannot say.
function sessionNameOf(pi) {
	try {
		const name = typeof pi.getSessionName === "function" ? pi.getSessionName() : undefined;
		return typeof name === "string" ? name : "";
	} catch {
		return "";
	}
}

// What the branch waits for: whether its last unanswered reply ends with
// the marker, the question that reply asks, and the reply by its entry id
// (another reply that asks is another question, though it may ask in the
// same words).
function waiting(ctx) {
	try {
		const sm = ctx && ctx.sessionManager;
		if (!sm || typeof sm.getBranch !== "function") return { inputNeeded: false };
		const branch = sm.getBranch();
		const text = lastUnansweredText(branch);
		if (!hasMarker(text)) return { inputNeeded: false };
		const id = lastUnanswered(branch)?.id;
		return { inputNeeded: true, question: questionOf(text), ...(typeof id === "string" ? { questionEntry: id } : {}) };
	} catch {
		return { inputNeeded: false };
	}
}

// leafOf is this Pi's leaf in its session file, the entry it continues
// from (null for an empty session, sent as ""). Another Pi continuing the
// same file appends from its own leaf (Pi does not lock the file), so the
// wrapper cannot take the file's last line for this Pi's. Nothing when
// this Pi cannot say: the wrapper then reads the last line, as before.
function leafOf(ctx) {
	try {
		const sm = ctx && ctx.sessionManager;
		if (!sm || typeof sm.getLeafId !== "function") return {};
		const id = sm.getLeafId();
		return { leafId: typeof id === "string" ? id : "" };
	} catch {
		return {};
	}
}

// Pi 1.6.0 says its mode; Pi 0.73.1 only has hasUI (true in interactive and
// RPC modes), so RPC is told apart by Pi's own argv.
function modeOf(ctx) {
	if (ctx && typeof ctx.mode === "string") return { mode: ctx.mode, inferred: false };
	if (!ctx || ctx.hasUI !== true) return { mode: "print", inferred: true };
	const argv = process.argv;
	const rpc = argv.some((a, i) => a === "--mode=rpc" || (a === "--mode" && argv[i + 1] === "rpc"));
	return { mode: rpc ? "rpc" : "tui", inferred: true };
}

// Pi tells its extensions of its own dialogs (ui_prompt_start and
// ui_prompt_end) since 0.84.4; an older Pi (0.73.1) opens them unseen and
// has no status channel either, so only the wrapper's screen can see that
// one waits. The hello says which (dialogs), and the wrapper leaves an
// older Pi's dialogs to the screen. Pi's version is in its package.json,
// above the entry script Pi was started by (process.argv[1], as the
// launcher keeps it), in PI_PACKAGE_DIR, where Pi itself looks first, or
// beside Pi's standalone binary (Bun's compiled executable, whose entry
// script is inside it), where Pi looks then. A Pi not found there, or
// another package (a fork numbers its own versions), says no: its dialogs
// are the screen's, at worst told twice, never missed.
//
// Versions compare as semver: Pi has published no prerelease, but a build
// numbered 0.84.4-rc.1 may come from before the events were added, so it
// ranks below 0.84.4 and says no, as does a version semver cannot read;
// build metadata (+…) does not count.
const PI_PACKAGES = ["@earendil-works/pi-coding-agent", "@mariozechner/pi-coding-agent"];
const DIALOG_EVENTS_SINCE = [0, 84, 4];
const SEMVER = /^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?(?:\+[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?$/;

export function piTellsDialogs(entry = process.argv[1], packageDir = process.env.PI_PACKAGE_DIR, execPath = process.execPath) {
	try {
		const m = SEMVER.exec(piVersion(entry, packageDir, execPath));
		if (!m) return false;
		for (let i = 0; i < 3; i++) {
			const n = Number(m[i + 1]);
			if (n !== DIALOG_EVENTS_SINCE[i]) return n > DIALOG_EVENTS_SINCE[i];
		}
		return m[4] === undefined; // 0.84.4 itself, not one of its prereleases
	} catch {
		return false;
	}
}

function piVersion(entry, packageDir, execPath) {
	const dirs = [];
	try {
		if (packageDir) dirs.push(asPiReadsIt(packageDir));
	} catch {}
	try {
		// dist/cli.js or dist/bundle/cli.js below the package's root.
		let dir = dirname(realpathSync(entry));
		for (let i = 0; i < 4 && !dirs.includes(dir); i++, dir = dirname(dir)) dirs.push(dir);
	} catch {}
	// A standalone binary's package.json is beside it, or beside the file
	// a link to it names (node's own directory holds no Pi package: the
	// name check below passes it over).
	const beside = (exe) => {
		try {
			const dir = dirname(exe());
			if (!dirs.includes(dir)) dirs.push(dir);
		} catch {}
	};
	beside(() => execPath);
	beside(() => realpathSync(execPath));
	for (const dir of dirs) {
		try {
			const file = join(dir, "package.json");
			const st = statSync(file);
			if (!st.isFile() || st.size > 1 << 20) continue; // never a FIFO or a huge file
			const pkg = JSON.parse(readFileSync(file, "utf8"));
			if (PI_PACKAGES.includes(pkg?.name) && typeof pkg.version === "string") return pkg.version;
		} catch {}
	}
	return "";
}

// asPiReadsIt turns PI_PACKAGE_DIR into the directory Pi takes it for
// (normalizePath in Pi's config, unchanged from 0.84.4 to 1.6.0, as it is
// on a unix): "~" alone or before a slash is the home directory, and a
// file:// URL is its path. Nothing more: "~name" stays a relative path,
// no space is trimmed. The probe runs in Pi's process, so homedir() and
// a relative path's base are Pi's own.
function asPiReadsIt(dir) {
	if (dir === "~") return homedir();
	if (dir.startsWith("~/")) return join(homedir(), dir.slice(2));
	if (dir.startsWith("file://")) return fileURLToPath(dir);
	return dir;
}

// encode writes one event line that the wrapper accepts. A payload too long
// for a line has its strings cut shorter, and a circular one loses only
// the repeated objects: dropping the whole payload would lose what decides
// the event (a requestId, or herdr:blocked's active, whose absence closes
// a wait instead of opening one). Only a payload that cannot fit even
// then goes as null. seq, when given, numbers a channel event (see
// channelSeq).
function encode(name, data, seq) {
	const value = data === undefined ? null : data;
	for (const cap of STRING_CAPS) {
		const line = stringify(name, value, cap, seq);
		if (line !== undefined && fitsLine(line)) return line + "\n";
	}
	return JSON.stringify(eventLine(name, null, seq)) + "\n";
}

function eventLine(name, data, seq) {
	return seq === undefined ? { type: "event", name, data } : { type: "event", name, seq, data };
}

function stringify(name, data, cap, seq) {
	const clip = (value) => {
		if (typeof value === "string" && value.length > cap) return value.slice(0, cap) + "…";
		if (typeof value === "bigint") return Number(value);
		return value;
	};
	try {
		return JSON.stringify(eventLine(name, data, seq), (_key, value) => clip(value));
	} catch {
		// Circular (or a getter that throws): fall through.
	}
	const seen = new WeakSet();
	try {
		return JSON.stringify(eventLine(name, data, seq), (_key, value) => {
			value = clip(value);
			if (value !== null && typeof value === "object") {
				if (seen.has(value)) return null;
				seen.add(value);
			}
			return value;
		});
	} catch {
		return undefined;
	}
}

// fitsLine counts bytes only for a line that may be too long: a UTF-16
// unit is at most three UTF-8 bytes.
function fitsLine(line) {
	if (line.length * 3 <= MAX_LINE) return true;
	const bytes = typeof Buffer === "function" ? Buffer.byteLength(line, "utf8") : new TextEncoder().encode(line).length;
	return bytes <= MAX_LINE;
}

// The open connection to the wrapper, or a new one; null while the wrapper
// cannot be reached (one attempt a second at most). A connection after the
// first starts with a resync: the events that went down with the old one
// (the wrapper drops a connection whose hello is late, and Node may hold
// the hello while Pi loads) would otherwise leave the wrapper without the
// session file, or thinking a running agent idle, until Pi next changed.
function connection({ resync = true } = {}) {
	if (shared.sock && !shared.sock.destroyed) return shared.sock;
	if (Date.now() < shared.retryAt) return null;
	const path = process.env.HERDR_PI_CONTROL;
	const token = process.env.HERDR_PI_CONTROL_TOKEN;
	if (!path || !token) return null;
	shared.retryAt = Date.now() + 1000;
	const sock = createConnection({ path });
	let connected = false;
	sock.on("connect", () => {
		connected = true;
	});
	sock.on("error", () => {
		shared.retryAt = Date.now() + 1000;
	});
	sock.on("close", () => {
		if (shared.sock !== sock) return;
		shared.sock = null;
		shared.taken = shared.behind = false;
		shared.written = 0; // unless it was taken, it carried nothing
		// The wrapper hung up on a live connection: connect again soon, so
		// that what it lost is repeated even if Pi stays quiet. A wrapper
		// that is gone refuses the connection and that is the end of it;
		// one that keeps hanging up without a word is left alone after a
		// few tries, until Pi's next event.
		if (connected && shared.session && shared.redials < MAX_REDIALS) {
			shared.redials++;
			const t = setTimeout(() => {
				try {
					connection();
				} catch {}
			}, 1000);
			if (typeof t.unref === "function") t.unref();
		}
	});
	sock.on("data", () => {
		shared.redials = 0; // the wrapper's hello: it took this connection
		if (shared.sock !== sock || shared.taken) return;
		shared.taken = true;
		flushKept(sock);
	});
	sock.on("drain", () => {
		if (shared.sock !== sock) return;
		if (shared.behind) {
			shared.behind = false;
			writeResync(sock);
		}
		flushKept(sock);
	});
	if (typeof sock.unref === "function") sock.unref(); // never keeps Pi alive
	const hello = { type: "hello", token, role: "probe", pid: process.pid, version: 1 };
	shared.tellsDialogs ??= piTellsDialogs(); // once: Pi does not change
	if (shared.tellsDialogs) hello.dialogs = true;
	sock.write(JSON.stringify(hello) + "\n");
	shared.sock = sock;
	shared.taken = shared.behind = false;
	shared.written = 0;
	if (shared.connections++ > 0 && resync) writeResync(sock);
	flushKept(sock); // what no connection the wrapper took has carried yet
	return sock;
}

function writeResync(sock) {
	try {
		for (const [name, data] of resyncEvents()) sock.write(encode(name, data));
	} catch {
		// Whatever Pi's context refused, the event that asked for this
		// connection still goes out.
	}
}

// What the wrapper needs to know again on a new connection: the session
// (asked afresh, so it says what the branch waits for now), a run under
// way, and the dialogs still open.
function resyncEvents() {
	if (!shared.session) return [];
	const events = [["session_start", shared.session("reconnect")]];
	if (shared.running) events.push(["agent_start", typeof shared.leaf === "function" ? shared.leaf() : null]);
	if (shared.compacting) events.push(["compaction_start", null]);
	for (const p of shared.prompts) events.push(["ui_prompt_start", p]);
	return events;
}

function send(name, data) {
	try {
		// A session_start says everything a resync would.
		const sock = connection({ resync: name !== "session_start" });
		if (!sock || shared.behind) return;
		if (sock.writableLength > MAX_BACKLOG) {
			// The wrapper stopped reading: Pi does not wait and the
			// buffer does not grow. The event is dropped, and once the
			// wrapper has read what is buffered the probe repeats what it
			// needs (drain, in connection).
			shared.behind = true;
			return;
		}
		sock.write(encode(name, data));
	} catch {
		// The wrapper is unreachable: Pi goes on, the wrapper falls back.
	}
}

// sendChannel forwards a channel event, in order with the others, and
// keeps it until a connection the wrapper took has carried it: one the
// wrapper drops before its answer (a late hello) takes what it carried
// with it, and a connection that is down or behind carries nothing. The
// next connection writes the kept events right after its resync: a wait
// closed meanwhile must close in the wrapper too, which holds the waits
// open for the probe's return. Each goes with its number (channelSeq), so
// that one written again on the next connection after the wrapper did read
// it is not handled twice.
function sendChannel(name, data) {
	try {
		shared.channelSeq = (shared.channelSeq || 0) + 1; // a shared state without it counts from 1
		keep(encode(name, data, shared.channelSeq));
		const sock = connection();
		if (sock) flushKept(sock);
	} catch {
		// The wrapper is unreachable: the event stays kept.
	}
}

function keep(line) {
	shared.kept.push(line);
	shared.keptSize += line.length;
	while (shared.kept.length > MAX_KEPT || shared.keptSize > MAX_BACKLOG) {
		shared.keptSize -= shared.kept.shift().length;
		if (shared.written > 0) shared.written--;
		shared.dropped++;
	}
}

// forgetKept drops the kept channel events when a session starts or ends:
// the wrapper closes the channel waits then (a resync of another session
// says so too), and the old session's events must not reopen them.
function forgetKept() {
	shared.kept = [];
	shared.keptSize = 0;
	shared.written = 0;
	shared.dropped = 0;
}

// flushKept writes the kept channel events the connection has not carried
// yet, as far as the backlog lets it (drain, in connection, goes on). Once
// the wrapper took the connection, what it carries is the wrapper's and is
// no longer kept; word of events the bound dropped goes first, and only on
// such a connection (it must not be lost with one the wrapper drops).
function flushKept(sock) {
	if (shared.sock !== sock || sock.destroyed || shared.behind) return;
	if (shared.taken) {
		forgetWritten();
		if (shared.dropped > 0) {
			if (sock.writableLength > MAX_BACKLOG) return;
			sock.write(encode("channel_events_lost", { dropped: shared.dropped }));
			shared.dropped = 0;
		}
	} else if (shared.dropped > 0) {
		return;
	}
	while (shared.written < shared.kept.length && sock.writableLength <= MAX_BACKLOG) {
		sock.write(shared.kept[shared.written++]);
	}
	if (shared.taken) forgetWritten();
}

function forgetWritten() {
	for (const line of shared.kept.splice(0, shared.written)) shared.keptSize -= line.length;
	shared.written = 0;
}

function lastAssistantOf(event) {
	const messages = event && Array.isArray(event.messages) ? event.messages : [];
	for (let i = messages.length - 1; i >= 0; i--) {
		const m = messages[i];
		if (m && m.role === "assistant") return m;
	}
	return undefined;
}

function stopReasonOf(event) {
	const m = lastAssistantOf(event);
	if (m) {
		const r = m.stopReason ?? m.stop_reason ?? m.finishReason;
		if (typeof r === "string") return r;
	}
	const r = event && (event.stopReason ?? event.stop_reason);
	return typeof r === "string" ? r : "";
}

// errorMessageOf is what Pi said went wrong with the run's last reply when
// it failed ("429: {…}", "Connection error."), for the notification that
// tells the failure; "" otherwise. Raw: the wrapper keeps the first line,
// hides secrets and sanitises it.
function errorMessageOf(event) {
	const m = lastAssistantOf(event);
	if (!m || stopReasonOf(event) !== "error" || typeof m.errorMessage !== "string") return "";
	return m.errorMessage.slice(0, 2000);
}

// cancelledRetry: the settling run ended in a retry the person cancelled
// (see retryCancelled). A compaction since the failed reply means Pi left it
// out to recover from a context overflow, not to retry it.
function cancelledRetry(ctx) {
	if (shared.compactedSinceEnd) return false;
	try {
		const sm = ctx && ctx.sessionManager;
		return !!sm && typeof sm.getBranch === "function" && retryCancelled(sm.getBranch());
	} catch {
		return false;
	}
}

function setup(pi) {
	if (!pi || typeof pi.on !== "function") return;
	const gen = ++shared.lastGen;
	const herdr = isHerdrEnv(process.env);
	const current = () => shared.rootGen === gen;
	const on = (name, handler) => {
		pi.on(name, (event, ctx) => {
			try {
				return handler(event || {}, ctx || {});
			} catch {
				return undefined;
			}
		});
	};

	on("session_start", (event, ctx) => {
		const { mode, inferred } = modeOf(ctx);
		if (mode !== "tui") {
			// Print, JSON and RPC runs are not ours to change or report; an
			// in-process sub-session must not take over the root's voice.
			if (shared.rootGen === 0 || current()) shared.notTui = true;
			return;
		}
		shared.rootGen = gen;
		shared.notTui = false;
		const sm = ctx.sessionManager || {};
		const call = (f) => {
			try {
				return typeof sm[f] === "function" ? sm[f]() : undefined;
			} catch {
				return undefined;
			}
		};
		// What cannot change during the session is read once; the file (a
		// session is written to disk late) and the branch are read afresh
		// for a resync.
		const fixed = {
			sessionSeq: ++shared.sessionSeq,
			previousSessionFile: event.previousSessionFile ?? "",
			mode,
			modeInferred: inferred,
			hasUI: ctx.hasUI === true,
			cwd: typeof ctx.cwd === "string" ? ctx.cwd : "",
		};
		const session = (reason) => ({
			reason,
			sessionName: sessionNameOf(pi),
			sessionFile: call("getSessionFile") ?? "",
			sessionId: call("getSessionId") ?? "",
			// A resync mid-run says so before its agent_start: the
			// wrapper keeps the pane working in between.
			running: shared.running,
			...fixed,
			...waiting(ctx),
			...leafOf(ctx),
			...(reason === "reconnect" && shared.lastRun ? { lastRun: lastRunNow() } : {}),
		});
		shared.lastEnd = shared.lastRun = null;
		shared.lastRunAt = undefined;
		shared.runsEnded = 0;
		shared.session = session;
		shared.leaf = () => leafOf(ctx);
		shared.settles = !inferred;
		shared.running = false;
		shared.compacting = false;
		shared.compactedSinceEnd = false;
		shared.compactionCancelled = false;
		shared.prompts = [];
		forgetKept();
		send("session_start", session(typeof event.reason === "string" ? event.reason : ""));
	});

	on("before_agent_start", (event) => {
		if (!herdr || !current()) return undefined;
		return { systemPrompt: appendInstruction(event.systemPrompt) };
	});

	on("agent_start", (event, ctx) => {
		if (!current()) return;
		shared.running = true;
		shared.compacting = false;
		shared.compactionCancelled = false;
		send("agent_start", leafOf(ctx));
	});
	on("agent_end", (event, ctx) => {
		if (!current()) return;
		if (!shared.settles) shared.running = false; // Pi 0.73.1: its run ends here
		shared.compactedSinceEnd = false;
		const errorMessage = errorMessageOf(event);
		shared.lastEnd = { stopReason: stopReasonOf(event), ...(errorMessage ? { errorMessage } : {}) };
		if (!shared.settles) {
			shared.lastRun = { ...shared.lastEnd, ended: ++shared.runsEnded };
			shared.lastRunAt = monotonicNow();
		}
		send("agent_end", {
			stopReason: stopReasonOf(event),
			...(errorMessage ? { errorMessage } : {}),
			sessionName: sessionNameOf(pi),
			...waiting(ctx),
			...leafOf(ctx),
		});
	});
	on("agent_settled", (event, ctx) => {
		if (!current()) return;
		shared.running = false;
		let idle = false;
		try {
			idle = typeof ctx.isIdle === "function" ? ctx.isIdle() === true : false;
		} catch {}
		const retry = cancelledRetry(ctx);
		const compaction = shared.compactionCancelled;
		shared.compactedSinceEnd = false;
		shared.compactionCancelled = false;
		shared.lastRun = {
			...(shared.lastEnd ?? {}),
			...(event.aborted === true ? { aborted: true } : {}),
			...(retry ? { retryCancelled: true } : {}),
			...(compaction ? { compactionCancelled: true } : {}),
			ended: ++shared.runsEnded,
		};
		shared.lastRunAt = monotonicNow();
		shared.lastEnd = null;
		send("agent_settled", {
			aborted: event.aborted === true,
			...(retry ? { retryCancelled: true } : {}),
			...(compaction ? { compactionCancelled: true } : {}),
			idle,
			sessionName: sessionNameOf(pi),
			...waiting(ctx),
			...leafOf(ctx),
		});
	});
	// /tree moves the session to another entry without a run: a question
	// on the branch left behind no longer waits.
	on("session_tree", (event, ctx) => {
		if (!current()) return;
		send("session_tree", leafOf(ctx));
	});
	// Compacting the context is a model call outside any run (/compact, or
	// Pi's own before or after one): without these the pane would read
	// idle through it. Pi before 1.x has no session_compact_failed; the
	// wrapper's screen ends such a spell then.
	on("session_before_compact", () => {
		if (!current()) return undefined;
		shared.compacting = true;
		shared.compactedSinceEnd = true;
		send("compaction_start", null);
		return undefined; // never cancels, never supplies a summary
	});
	for (const name of ["session_compact", "session_compact_failed"]) {
		on(name, (event) => {
			if (!current()) return;
			shared.compacting = false;
			// Escape on a compaction within a run ends the run there, with
			// the failed reply a context overflow left (or the reply
			// before a compaction at the threshold) and agent_settled's
			// aborted false; Pi reports it on its status channel as
			// cancelled (idle), not as the reply's outcome.
			if (name === "session_compact_failed" && event.aborted === true && shared.running) shared.compactionCancelled = true;
			send("compaction_end", null);
		});
	}
	on("session_shutdown", (event) => {
		if (!current()) return;
		// Nothing to repeat until the next session starts (a quit has none).
		shared.session = null;
		shared.running = false;
		shared.compacting = false;
		shared.prompts = [];
		forgetKept();
		send("session_shutdown", { reason: event.reason ?? "", targetSessionFile: event.targetSessionFile ?? "" });
	});
	on("ui_prompt_start", (event) => {
		if (!current()) return;
		const prompt = { kind: event.kind ?? "", title: event.title ?? "" };
		shared.prompts.push(prompt);
		send("ui_prompt_start", prompt);
	});
	on("ui_prompt_end", (event) => {
		if (!current()) return;
		shared.prompts.pop(); // the wrapper closes the latest too
		send("ui_prompt_end", { kind: event.kind ?? "", title: event.title ?? "" });
	});

	if (pi.events && typeof pi.events.on === "function") {
		for (const channel of BUS_CHANNELS) {
			try {
				pi.events.on(channel, (data) => {
					try {
						if (current()) sendChannel(channel, data);
					} catch {}
				});
			} catch {}
		}
	}

	// Pi 1.6.0 only. Hides the marker while the TUI session runs inside
	// Herdr. Before the first session_start the mode is not known yet (a
	// resumed session's history is drawn early); the probe is only ever
	// loaded into interactive Pi, so it hides then too. Pi replaces an
	// instance's transformer on reload, so no generation check is needed.
	if (herdr && typeof pi.registerMarkdownTransformer === "function") {
		try {
			pi.registerMarkdownTransformer((markdown, ctx) => {
				try {
					if (shared.notTui || !ctx || ctx.messageType !== "assistant") return markdown;
					return stripMarker(markdown, ctx.isStreaming === true);
				} catch {
					return markdown;
				}
			});
		} catch {}
	}
}

export default function herdrPiProbe(pi) {
	try {
		setup(pi);
		setupHandoff(pi, { herdr: isHerdrEnv(process.env) });
	} catch {
		// Never fail Pi's start-up.
	}
}
