// herdr-pi handoff: the workflow owner's side of herdr-pi's live handoff.
// The probe loads it in every Pi that `herdr-pi wrap` starts; it does
// anything only when the workflow engine (pi-extensible-workflows) is loaded
// in the same Pi. Then it
// - registers herdr-pi's attempt actions ("Open session in Herdr pane",
//   "Open live session in Herdr pane") and an agent setup hook with the
//   engine's registry (found on globalThis; nothing is imported), and hides
//   the same actions of the engine's own Herdr extension when that is
//   loaded too, so one set shows;
// - wraps each local agent session the engine creates (the setup hook puts
//   a transport of ours around the engine's), so that any live attempt can
//   be handed off, whoever asks: the menu, or `herdr-pi open` from another
//   pane through the wrapper;
// - in the engine's fully inspectable mode (read from its global settings
//   file each time a run starts), puts a transport of ours in place of the
//   engine's local one: every prompt of every agent then runs in a tab of
//   the run's Herdr workspace, which the wrapper opens, watches and closes
//   (see "fully inspectable mode" below);
// - speaks the owner link of the wrapper's control socket (role "owner",
//   described in bridge/control/owner.go): at the turn boundary it cuts the
//   local turn, suspends the session and describes the launch as data; it
//   runs bridged tool calls; on handback it resumes the session and
//   continues it when the turn was cut.
// Every Herdr call, file, socket and pane is the wrapper's business.
//
// Like the probe it never throws into Pi and never makes Pi wait on the
// wrapper, except where ownership must not be doubled: a suspended session
// waits for its handback (bounded when the wrapper is gone).

import { Buffer } from "node:buffer";
import { createConnection } from "node:net";
import { closeSync, constants, existsSync, fstatSync, openSync, readFileSync, realpathSync, statSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const REGISTRY_KEY = Symbol.for("pi-extensible-workflows.workflow-registry");
const SHARED_KEY = Symbol.for("herdr-pi.handoff.v1");
const WRAPPED = Symbol.for("herdr-pi.handoff.transport");
const PATCHED = Symbol.for("herdr-pi.handoff.registry-patched");

export const INSPECT_LABEL = "Open session in Herdr pane";
export const LIVE_LABEL = "Open live session in Herdr pane";
// What the pane's Pi is told when it takes over a cut turn, and what the
// owner's session is told when it gets a cut turn back.
export const CONTINUE_IN_PANE = "You now run in a Herdr pane. Carry on with the workflow task from where this session stopped.";
export const CONTINUE_LOCALLY = "You are back in the workflow. Carry on with the task from where the session now stands.";

const VERSION = 2; // the owner link's protocol version (bridge/control OwnerVersion)
// In UTF-8 bytes, below the wrapper's owner-line limit (control.MaxOwnerLine),
// which counts bytes: a launch or tool result in a script of three-byte
// characters is three times as long there as in JavaScript's count.
const MAX_LINE = 16 * 1024 * 1024 - 1024;
const MAX_ERROR = 1000;
const SETTLED = new Set(["completed", "failed", "cancelled", "stopped"]);

// State shared by every instance of this module in the process (Pi
// re-imports extensions on /reload; live attempts and the link outlive it).
const shared = (globalThis[SHARED_KEY] ??= {
	link: null, // { sock, buf, linked }
	retryAt: 0,
	attempts: new Map(), // `${runId}\n${sessionId}` → attempt
	wrappedSessions: new WeakMap(), // the session object the engine holds → attempt
	apis: new WeakSet(), // registry apis we registered with
	ours: new WeakSet(), // our action objects (the registry freezes, never copies them)
	calls: new Map(), // tool call id → AbortController
	ui: null, // the root session's UI: status lines and notices
	sessionManager: null, // the root session's manager (its class opens transcripts)
	nextRequest: 0,
	herdr: false,
	engine: null, // how registering with the current registry went
	runModes: new Map(), // run id → fully inspectable (read when the run's first agent starts)
	inspectableRuns: new Set(), // runs whose agents run in Herdr: their end is told to the wrapper
	interruptedRuns: new Set(), // runs the engine marked interrupted: its owner's session is ending
	buses: new WeakSet(), // event buses we listen to for the end of runs
	pi: null, // the latest load's extension api: the engine's commands and tools
});

// ---- small helpers ---------------------------------------------------------

const errorText = (e) => String(e && typeof e === "object" && "message" in e ? e.message : e).slice(0, MAX_ERROR);

function isObject(v) {
	return v !== null && typeof v === "object" && !Array.isArray(v);
}

export function hasToolCall(message) {
	return isObject(message) && Array.isArray(message.content) && message.content.some((p) => isObject(p) && p.type === "toolCall");
}

function calledTool(message, name) {
	return isObject(message) && Array.isArray(message.content) && message.content.some((p) => isObject(p) && p.type === "toolCall" && p.name === name);
}

// A turn needs continuing when it has no reply, was aborted, or ended on a
// tool call (reference §5.3, §5.10). Cutting a turn at its boundary often
// catches the next model request just started: Pi then records an empty
// reply with stop reason "error" ("This operation was aborted"), which
// counts as cut too.
export function needsContinuation(message) {
	if (!message || message.stopReason === "aborted" || hasToolCall(message)) return true;
	return cutRequest(message);
}

// cutRequest: an empty reply that stopped on an error — a model request
// cut by an abort that was not the session's own (the turn boundary's, or
// a pane's Pi closed mid-request).
function cutRequest(message) {
	return isObject(message) && message.stopReason === "error" && (!Array.isArray(message.content) || message.content.length === 0);
}

export function sessionFileOf(reference) {
	const locator = reference && reference.locator;
	return isObject(locator) && typeof locator.sessionFile === "string" && locator.sessionFile !== "" ? locator.sessionFile : "";
}

function isDir(path) {
	try {
		return typeof path === "string" && path.trim() !== "" && statSync(path).isDirectory();
	} catch {
		return false;
	}
}

// agentDir is Pi's agent directory as Pi itself reads PI_CODING_AGENT_DIR:
// "~" and "~/…" are under the home directory, a file:// URL is its path,
// anything else stays as given. herdr-pi's Go reader (settings.Resolve)
// does the same, so doctor and open judge the mode from the file the probe
// reads.
function agentDir(env) {
	const dir = env.PI_CODING_AGENT_DIR;
	if (!dir) return join(homedir(), ".pi", "agent");
	if (dir === "~") return homedir();
	if (dir.startsWith("~/")) return join(homedir(), dir.slice(2));
	if (dir.startsWith("file://")) {
		try {
			return fileURLToPath(dir);
		} catch {}
	}
	return dir;
}

// The engine's settings keys (workflows-handoff.md §3): it rejects any
// other, so a file that has one would fail every run anyway.
const SETTINGS_KEYS = new Set(["concurrency", "backgroundWidget", "modelAliases", "skills", "extensions", "tools", "extensionSettings", "retention"]);
const EXTENSION_SETTINGS_KEYS = new Set(["herdr", "trajectory"]);
export const MODE_KEY = "extensionSettings.herdr.enableFullyInspectableMode";

export function settingsFile(env) {
	return join(agentDir(env), "pi-extensible-workflows", "settings.json");
}

// quoteKey is a key of the settings file as a problem quotes it: escaped
// as JSON, and cut after 80 characters saying how long it was (a key may
// be most of a MiB), as herdr-pi's Go reader quotes it (it counts bytes).
function quoteKey(k) {
	const chars = [...k];
	if (chars.length <= 80) return JSON.stringify(k);
	return `${JSON.stringify(chars.slice(0, 80).join(""))}… (${chars.length} characters)`;
}

// SETTINGS_MAX is the most of the engine's settings file read, as
// herdr-pi's Go reader reads every settings file (settings.ReadFile).
const SETTINGS_MAX = 1 << 20;

// readRegular reads the file at path as text when it is a regular file of
// at most max bytes. It opens O_NONBLOCK and only then looks: a named pipe
// there has no writer, and a blocking read of it held Pi's start forever
// (this runs as the owner's session starts); /dev/zero never ends.
// Anything else throws, a missing file with ENOENT as before.
function readRegular(path, max) {
	const fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
	try {
		const st = fstatSync(fd);
		if (!st.isFile()) throw new Error("not a regular file");
		if (st.size > max) throw new Error(`over ${max} bytes`);
		return readFileSync(fd, "utf8");
	} finally {
		closeSync(fd);
	}
}

// readInspectable reads the engine's fully inspectable mode from its
// global settings file (the project file is never read for it): { on }, or
// { on: false, error } naming the file and the key when the file cannot
// say. A missing file is the default, off.
export function readInspectable(env) {
	const file = settingsFile(env);
	const bad = (what) => ({ on: false, error: `${file}: ${what}` });
	let text;
	try {
		text = readRegular(file, SETTINGS_MAX);
	} catch (e) {
		return e && e.code === "ENOENT" ? { on: false } : bad(`cannot be read (${errorText(e)})`);
	}
	let s;
	try {
		s = JSON.parse(text);
	} catch (e) {
		return bad(`is not valid JSON (${errorText(e)})`);
	}
	if (!isObject(s)) return bad("must hold a JSON object");
	if (isObject(s.extensions) && "herdr" in s.extensions)
		return bad(`the Herdr setting is in its old place, "extensions": {"herdr": …}, which the engine rejects ("extensions" is a list); move it to "extensionSettings": {"herdr": {"enableFullyInspectableMode": true}}`);
	for (const k of Object.keys(s)) if (!SETTINGS_KEYS.has(k)) return bad(`unknown key ${quoteKey(k)}`);
	const ext = s.extensionSettings;
	if (ext === undefined) return { on: false };
	if (!isObject(ext)) return bad(`"extensionSettings" must be an object`);
	for (const k of Object.keys(ext)) if (!EXTENSION_SETTINGS_KEYS.has(k)) return bad(`unknown key ${quoteKey(`extensionSettings.${k}`)}`);
	const h = ext.herdr;
	if (h === undefined) return { on: false };
	if (!isObject(h)) return bad(`"extensionSettings.herdr" must be an object`);
	for (const k of Object.keys(h)) if (k !== "enableFullyInspectableMode") return bad(`unknown key ${quoteKey(`extensionSettings.herdr.${k}`)} (the only one is enableFullyInspectableMode)`);
	const v = h.enableFullyInspectableMode;
	if (v !== undefined && typeof v !== "boolean") return bad(`"${MODE_KEY}" must be true or false`);
	return { on: v === true };
}

// fullyInspectable is whether the mode is on; a bad file is off.
export function fullyInspectable(env) {
	return readInspectable(env).on;
}

// runInspectable decides the mode for a run when its first agent starts
// (the file is read again for every run, so a change needs no restart),
// and shows the person a file that cannot say, once per run.
function runInspectable(env, runId) {
	if (shared.runModes.has(runId)) return shared.runModes.get(runId);
	const { on, error } = readInspectable(env);
	if (runId) shared.runModes.set(runId, on);
	if (error) notify(`herdr-pi: ${error}. Fully inspectable mode is off for this run.`, "error");
	return on;
}

// The Pi this process runs: its executable and the CLI script of the Pi
// package that process loaded (never the engine's own copy of Pi, never a
// bare `pi` from PATH). A single-file binary (Bun) is the executable alone.
let runtimeCache;
export function piRuntime() {
	if (runtimeCache) return runtimeCache;
	const executable = process.execPath;
	if (process.versions && process.versions.bun) return (runtimeCache = { executable });
	try {
		const script = realpathSync(process.argv[1]);
		for (let dir = dirname(script); ; dir = dirname(dir)) {
			const pkgPath = join(dir, "package.json");
			if (existsSync(pkgPath)) {
				const pkg = JSON.parse(readFileSync(pkgPath, "utf8"));
				const bin = typeof pkg.bin === "string" ? pkg.bin : pkg.bin && pkg.bin.pi;
				if (typeof bin === "string" && /pi-coding-agent$/.test(pkg.name || "")) {
					const entrypoint = resolve(dir, bin);
					if (existsSync(entrypoint)) return (runtimeCache = { executable, entrypoint: realpathSync(entrypoint) });
				}
			}
			if (dirname(dir) === dir) break;
		}
		return (runtimeCache = { executable, entrypoint: script });
	} catch (e) {
		return { error: `the Pi this owner runs is unavailable, so no pane could start it (${errorText(e)}); restart the owner's Pi to hand its agents off` };
	}
}

// ---- the owner link ----------------------------------------------------------

function link() {
	const l = shared.link;
	if (l && !l.sock.destroyed) return l;
	if (Date.now() < shared.retryAt) return null;
	const path = process.env.HERDR_PI_CONTROL;
	const token = process.env.HERDR_PI_CONTROL_TOKEN;
	if (!path || !token) return null;
	shared.retryAt = Date.now() + 1000;
	const sock = createConnection({ path });
	const next = { sock, buf: "", linked: false };
	sock.setEncoding("utf8");
	sock.on("error", () => {});
	sock.on("close", () => {
		if (shared.link === next) shared.link = null;
		linkLost();
	});
	sock.on("data", (chunk) => {
		next.buf += chunk;
		if (next.buf.length > MAX_LINE + 1024) {
			sock.destroy(); // the wrapper never sends lines this long
			return;
		}
		let nl;
		while ((nl = next.buf.indexOf("\n")) >= 0) {
			const line = next.buf.slice(0, nl);
			next.buf = next.buf.slice(nl + 1);
			if (line === "") continue;
			let m;
			try {
				m = JSON.parse(line);
			} catch {
				continue;
			}
			try {
				receive(next, m);
			} catch {}
		}
	});
	if (typeof sock.unref === "function") sock.unref(); // never keeps Pi alive
	sock.write(JSON.stringify({ type: "hello", token, role: "owner", pid: process.pid, version: VERSION }) + "\n");
	shared.link = next;
	return next;
}

// send writes one owner → wrapper line; false when it could not (no
// wrapper, or a line too long for the link).
function send(type, id, data) {
	try {
		const l = link();
		if (!l) return false;
		const m = { type };
		if (id) m.id = id;
		if (data !== undefined) m.data = data;
		const line = JSON.stringify(m);
		if (!fitsLine(line)) return false;
		l.sock.write(line + "\n");
		return true;
	} catch {
		return false;
	}
}

// fits says whether a message goes in one line of the owner link. One that
// does not is refused with a reason (too_large, a tool error) here: sent,
// the wrapper would close the whole link, ending every handoff of this Pi.
export function fits(type, id, data) {
	try {
		return fitsLine(JSON.stringify({ type, id, data }));
	} catch {
		return false;
	}
}

// fitsLine counts bytes only for a line that may be too long: a UTF-16
// unit is at most three UTF-8 bytes.
function fitsLine(line) {
	if (line.length * 3 <= MAX_LINE) return true;
	return Buffer.byteLength(line, "utf8") <= MAX_LINE;
}

function receive(l, m) {
	if (!isObject(m)) return;
	const data = isObject(m.data) ? m.data : {};
	switch (m.type) {
		case "hello":
			if (m.ok === true) l.linked = true;
			return;
		case "error":
			l.sock.destroy();
			return;
		case "handoff":
			return onHandoffOrder(m.id, data);
		case "handback":
			return onHandback(m.id, data);
		case "pane_state":
			return onPaneState(m.id, data);
		case "request_refused": {
			const error = typeof data.error === "string" ? data.error : "the request was refused";
			if (turnRefused(m.id, error)) return;
			return menuRefused(m.id, error);
		}
		case "tool_call":
			return void runTool(m.id, data);
		case "tool_abort": {
			const c = shared.calls.get(m.id);
			if (c) c.abort();
			return;
		}
	}
}

// The wrapper is gone: nothing can close the panes any more, so every
// handoff comes back now.
function linkLost() {
	for (const a of shared.attempts.values()) {
		const h = a.handoff;
		// A launched pane's Pi may still run, and nothing follows it now:
		// the session is not reopened (two writers), the attempt fails.
		if (h) h.finish({ reason: "aborted", transferred: h.launched, needsContinue: false, paneRunning: h.launched, error: h.launched ? "herdr-pi's wrapper went away while the attempt ran in a Herdr pane, whose Pi may still write the session" : "the wrapper's link closed" });
		dropTurn(a, "herdr-pi's wrapper went away");
	}
	for (const c of shared.calls.values()) c.abort();
}

function notify(text, level) {
	try {
		shared.ui?.notify(plainNotice(text), level);
	} catch {}
}

function status(a, text) {
	a.statusShown++;
	try {
		shared.ui?.setStatus(`herdr-pi-handoff:${a.sessionId}`, text === undefined ? undefined : `${a.label}: ${text}`);
	} catch {}
}

// ---- registration with the engine ---------------------------------------------

function registryApi() {
	const host = globalThis[REGISTRY_KEY];
	const api = host && host.api;
	return api && typeof api.register === "function" ? api : undefined;
}

// register puts herdr-pi's extension into the engine's current registry
// once. It is called when the module loads (the engine loaded first: its
// registry exists and is open) and from session_start (the engine loads
// after us: our handler runs before the engine's, which closes the
// registry). The registry object is the engine's; we never create it.
function register(env) {
	const api = registryApi();
	if (!api || shared.apis.has(api)) return;
	shared.apis.add(api); // one try per registry
	const fully = fullyInspectable(env);
	const outcome = { api, registered: false, error: "", fullyInspectable: fully };
	shared.engine = outcome;
	if (api.frozen) {
		outcome.error = "the workflow engine closed its registry before herdr-pi's probe could register (the probe loaded after the engine started its session)";
		return;
	}
	try {
		api.register(extension(env, fully));
		outcome.registered = true;
		hideOthers(api);
	} catch (e) {
		outcome.error = errorText(e);
	}
}

// reportEngine tells the wrapper how registration went and whether the
// engine's own Herdr extension is loaded (and hidden), once every session
// start: by then every extension has registered.
function reportEngine() {
	const o = shared.engine;
	if (!o || o.api !== registryApi()) return;
	const original = typeof o.api[PATCHED] === "function" ? o.api[PATCHED] : o.api.agentAttemptActions;
	const theirs = Object.entries(safe(() => original.call(o.api), {})).filter(([, x]) => x && (x.label === LIVE_LABEL || x.label === INSPECT_LABEL) && !shared.ours.has(x));
	send("engine", undefined, {
		registered: o.registered,
		...(o.error ? { error: o.error } : {}),
		upstream: theirs.length > 0,
		...(o.registered && theirs.length ? { hidden: theirs.map(([name]) => name) } : {}),
		fullyInspectable: o.fullyInspectable,
	});
}

function safe(f, fallback) {
	try {
		return f();
	} catch {
		return fallback;
	}
}

// hideOthers makes the registry's action list leave out any other action
// labelled like ours (the engine's Herdr extension registers the same two
// labels), so the /workflow menu shows exactly one set: ours. The engine
// reads the list through this api object each time it builds the menu, so
// an extension that registers after us is hidden as well.
function hideOthers(api) {
	if (api[PATCHED] || typeof api.agentAttemptActions !== "function") return;
	const original = api.agentAttemptActions;
	api.agentAttemptActions = function () {
		const all = original.call(this);
		const drop = Object.entries(all).filter(([, x]) => x && (x.label === LIVE_LABEL || x.label === INSPECT_LABEL) && !shared.ours.has(x));
		if (drop.length === 0) return all;
		const names = new Set(drop.map(([name]) => name));
		return Object.freeze(Object.fromEntries(Object.entries(all).filter(([name]) => !names.has(name))));
	};
	api[PATCHED] = original;
}

// linked: the wrapper accepted the owner link, so it can act on requests.
// cancelGraceMs is how long a cancelled handoff waits for the wrapper's
// handback before it gives up on it. It outlasts the wrapper's own worst
// case for making sure the pane's Pi is gone (5 s after pane.close, then
// 5 s after each of at most three signals: handoff/live/agent.go), so a
// wrapper at work is never taken for one that will not answer.
let cancelGraceMs = 30_000;

// setCancelGrace changes cancelGraceMs (tests).
export function setCancelGrace(ms) {
	cancelGraceMs = ms;
}

export function linked() {
	const l = shared.link;
	return Boolean(l && l.linked && !l.sock.destroyed);
}

function extension(env, fully) {
	// The actions show inside Herdr, with a wrapper that takes requests.
	const herdr = () => shared.herdr && linked();
	const usableCwd = (ctx) => [ctx.attempt?.setup?.cwd, ctx.run?.cwd].find(isDir);
	const label = (ctx) => [ctx.agent?.label, ctx.agent?.name].find((x) => typeof x === "string" && x.trim()) ?? "workflow agent";

	const inspectVisible = (ctx) =>
		herdr() && !ctx.liveSession && SETTLED.has(ctx.agent?.state) && Boolean(ctx.session?.sessionId) && usableCwd(ctx) !== undefined;
	const inspect = (ctx) => {
		const id = `r${++shared.nextRequest}`;
		const sessionFile = sessionFileOf(ctx.session);
		const sent = send("inspect_request", id, {
			runId: ctx.run?.id ?? "",
			agentId: ctx.agent?.id ?? "",
			attempt: ctx.attempt?.attempt ?? 0,
			sessionId: ctx.session?.sessionId ?? "",
			...(sessionFile ? { sessionFile } : {}),
			cwd: usableCwd(ctx) ?? "",
			...(ctx.run ? {} : { standalone: true }),
		});
		if (!sent) throw new Error("herdr-pi's wrapper cannot be reached");
	};

	// In fully inspectable mode every agent already runs in a pane, so no
	// live action is offered: not for an agent of our Herdr transport, nor
	// when the engine's own Herdr extension runs the mode.
	const inPanesAlready = () => fully && safe(() => registryApi().agentSetupHooks().some((h) => h && h.name === "fullyInspectable"), false);
	const liveVisible = (ctx) => {
		if (!herdr() || inPanesAlready() || !ctx.liveSession || !ctx.prepared || !ctx.handoff) return false;
		const a = shared.wrappedSessions.get(ctx.liveSession);
		return Boolean(a && !a.inspectable && sessionFileOf(a.inner.reference));
	};
	const live = (ctx) => {
		const a = shared.wrappedSessions.get(ctx.liveSession);
		if (!a) throw new Error("herdr-pi does not hold this live session");
		if (!sessionFileOf(a.inner.reference)) throw new Error("the session has no transcript file yet to hand off");
		const id = `r${++shared.nextRequest}`;
		const sent = send("handoff_request", id, {
			runId: ctx.run?.id ?? a.runId,
			agentId: ctx.agent?.id ?? "",
			attempt: ctx.attempt?.attempt ?? a.attempt,
			sessionId: a.sessionId,
			label: label(ctx),
			...(ctx.run ? {} : { standalone: true }),
		});
		if (!sent) throw new Error("herdr-pi's wrapper cannot be reached");
		a.asked = id; // its refusal takes the line below down again
		// A handoff under way keeps its own line (how its pane is doing):
		// the wrapper answers this request with where the attempt is.
		if (!a.handoff) status(a, "handoff requested");
	};
	const actions = {
		herdrPiOpenSession: { label: INSPECT_LABEL, visible: inspectVisible, run: inspect, visibleStandalone: inspectVisible, runStandalone: inspect },
		herdrPiOpenLiveSession: { label: LIVE_LABEL, visible: liveVisible, run: live, visibleStandalone: liveVisible, runStandalone: live },
	};
	for (const x of Object.values(actions)) shared.ours.add(x);
	return {
		version: "1.0.0",
		headline: "herdr-pi: workflow agents in Herdr panes",
		description: "Opens workflow agent sessions in Herdr panes and hands live ones over and back (herdr-pi open).",
		agentAttemptActions: actions,
		agentSetupHooks: {
			// Fully inspectable mode, at the engine's usual priority: it
			// replaces the local transport with ours, which runs every
			// prompt in Herdr.
			herdrPiFullyInspectable: { priority: 10, setup: (agent, context) => inspectableTransport(env, agent, context) },
			// Last, so it wraps whatever transport the other hooks chose;
			// only the engine's local sessions are wrapped.
			herdrPiLiveSessions: { priority: 1000, setup: wrapTransport },
		},
	};
}

function wrapTransport(agent, context) {
	if (context && context.mode === "inspection") return;
	const inner = agent.transport;
	if (!inner || inner.id !== "local" || inner[WRAPPED] || typeof inner.createSession !== "function") return;
	agent.transport = Object.freeze({
		id: inner.id,
		[WRAPPED]: true,
		async createSession(prepared, sessionContext) {
			const session = await inner.createSession(prepared, sessionContext);
			try {
				return wrapSession(session, prepared, sessionContext || context);
			} catch {
				return session;
			}
		},
	});
}

// ---- live attempts -------------------------------------------------------------

// wrapSession returns the session the engine will hold: the engine's own
// local session with prompt, abort and dispose of ours, which can cut a
// turn, hand the session off and take it back.
function wrapSession(inner, prepared, sctx) {
	const a = newAttempt(inner, prepared, sctx);
	const onAbort = () => {
		if (a.handoff) cancelHandoff(a, ...runAborted(a));
	};
	a.signal?.addEventListener?.("abort", onAbort, { once: true });

	const wrapped = {
		...inner,
		getLastAssistant() {
			const last = a.sticky ?? inner.getLastAssistant();
			return (a.handoff || a.signal?.aborted) && cutRequest(last) ? asAborted(last) : last;
		},
		// The engine follows the turn through these events too: a request
		// the handoff's cut ends reaches it as aborted (see asAborted).
		subscribe(listener) {
			return inner.subscribe((event) => listener(cutEvent(a, event)));
		},
		...(typeof inner.subscribeAsync === "function"
			? {
					subscribeAsync(listener) {
						return inner.subscribeAsync((event) => listener(cutEvent(a, event)));
					},
				}
			: {}),
		async prompt(text) {
			if (a.idle) await a.idle;
			a.sticky = undefined;
			let message = text;
			for (;;) {
				let result;
				let failure;
				a.prompting = true;
				try {
					result = await inner.prompt(message);
				} catch (e) {
					failure = e;
				} finally {
					a.prompting = false;
				}
				const h = a.handoff;
				if (!h) {
					if (failure !== undefined) throw failure;
					return result;
				}
				h.cut = true; // the prompt ended: its turn is over either way
				const after = await runHandoff(a, h);
				if (after.resumeError !== undefined) throw after.resumeError;
				if (after.continue && !a.disposed) {
					message = CONTINUE_LOCALLY;
					continue;
				}
				if (failure !== undefined && !after.transferred) throw failure;
				const last = wrapped.getLastAssistant();
				return last ? { assistant: last } : {};
			}
		},
		async abort() {
			const h = a.handoff;
			// A handed-off session has no local turn to abort; a handoff
			// still waiting for its boundary ends with the turn it waited on.
			if (h && h.cut) return;
			if (h) refuse(a, h, "stopped", "the attempt stopped before its turn ended");
			await inner.abort();
		},
		async dispose() {
			a.disposed = true;
			if (a.handoff) {
				cancelHandoff(a, "the attempt ended");
				await a.handoff?.done;
			}
			if (a.idle) await a.idle;
			forgetAttempt(a, onAbort);
			await inner.dispose();
		},
	};
	return holdAttempt(a, wrapped);
}

// asAborted: a request that a handoff cut — at the turn boundary, or by
// closing the pane's Pi mid-request — reads to the engine as the local
// abort it stands for. Pi records it as an empty reply that stopped on an
// error ("This operation was aborted"), which the engine takes for a
// provider failure: a run stopped during the handoff would then ask the
// person to retry the agent, holding its session open until answered.
// An empty aborted reply the engine passes over, as for its own handoff's
// cut. (The transcript keeps what Pi wrote.)
function asAborted(message) {
	return { ...message, stopReason: "aborted" };
}

// cutEvent is the engine's view of event: a turn's last reply that the
// handoff under way cut, as aborted.
function cutEvent(a, event) {
	if (!a.handoff?.cut || !isObject(event) || (event.type !== "message_end" && event.type !== "turn_end") || !cutRequest(event.message)) return event;
	return { ...event, message: asAborted(event.message) };
}

// newAttempt is herdr-pi's record of one agent attempt of the engine.
// LABEL_MAX is the most bytes of an attempt's label the wrapper takes
// (control.Attempt's check): a longer one, or one with a control, made it
// close the whole owner link.
const LABEL_MAX = 200;

// attemptLabel is the workflow's name for an attempt as the probe uses it
// everywhere (status line, notices, the wrapper): each character the Go
// code's termtext.Harmful names (controls, bidi controls, U+FFFD) a space,
// as termtext.Clean makes it, nothing else changed, so a label stays the
// one the workflow gave; cut to LABEL_MAX bytes; "workflow agent" when it
// has none.
function attemptLabel(text) {
	const label = typeof text === "string" ? text.replace(HARMFUL, " ") : "";
	if (!label.trim()) return "workflow agent";
	if (Buffer.byteLength(label, "utf8") <= LABEL_MAX) return label;
	let out = "";
	for (const c of label) {
		if (Buffer.byteLength(out + c + "…", "utf8") > LABEL_MAX) break;
		out += c;
	}
	return out + "…";
}

function newAttempt(inner, prepared, sctx) {
	const a = {
		inner,
		prepared,
		runId: sctx?.run?.runId ?? "",
		workflow: sctx?.run?.workflow?.name ?? "",
		sessionId: inner.reference.sessionId,
		attempt: sctx?.attempt ?? 0,
		tuiIndex: sctx?.tuiIndex ?? 0,
		label: attemptLabel([sctx?.tuiLabel, sctx?.identity?.callSite, prepared.sessionLabel].find((x) => typeof x === "string" && x.trim())),
		signal: sctx?.signal,
		prompting: false,
		turnActive: false,
		handoff: null, // the handoff under way
		idle: null, // a handoff started while no prompt ran
		sticky: undefined, // the reply that stays the result (see afterHandback)
		resultSubmitted: false,
		disposed: false,
		statusShown: 0, // counts the status lines set, so a late take-down spares a newer one
	};
	a.key = `${a.runId}\n${a.sessionId}`;
	inner.subscribe((event) => observe(a, event));
	return a;
}

// holdAttempt makes wrapped the session the engine holds for a, and tells
// the wrapper the attempt is live.
function holdAttempt(a, wrapped) {
	a.wrapped = wrapped;
	shared.attempts.set(a.key, a);
	shared.wrappedSessions.set(wrapped, a);
	send("attempt", undefined, attemptData(a, true));
	return wrapped;
}

// forgetAttempt: the engine disposes the attempt's session.
function forgetAttempt(a, onAbort) {
	shared.attempts.delete(a.key);
	a.signal?.removeEventListener?.("abort", onAbort);
	send("attempt", undefined, attemptData(a, false));
	status(a, undefined);
}

function attemptData(a, live) {
	const sessionFile = sessionFileOf(a.inner.reference);
	return {
		runId: a.runId,
		sessionId: a.sessionId,
		...(sessionFile ? { sessionFile } : {}),
		...(a.workflow ? { workflow: a.workflow } : {}),
		label: a.label,
		attempt: a.attempt,
		live,
	};
}

const TURN_STARTS = new Set(["turn_start", "turn_started", "turnStarted", "agent_start"]);
const TURN_ENDS = new Set(["turn_end", "turnEnded", "agent_end", "agent_settled"]);

function observe(a, event) {
	const type = event && event.type;
	if (TURN_STARTS.has(type)) a.turnActive = true;
	if (TURN_ENDS.has(type)) {
		a.turnActive = false;
		// The turn boundary: a waiting handoff cuts here, so the local
		// agent never starts its next turn.
		const h = a.handoff;
		if (h && !h.cut && a.prompting) cut(a, h);
	}
	if (type === "tool_execution_end" && event.toolName && event.toolName === a.prepared.resultTool?.name && event.isError !== true) a.resultSubmitted = true;
}

function cut(a, h) {
	h.cut = true;
	void Promise.resolve()
		.then(() => a.inner.abort())
		.catch(() => {});
}

function findAttempt(runId, sessionId) {
	const exact = shared.attempts.get(`${runId}\n${sessionId}`);
	if (exact) return exact;
	for (const a of shared.attempts.values()) if (a.sessionId === sessionId && (!runId || a.runId === runId)) return a;
	return undefined;
}

// onHandoffOrder: the wrapper asks for a handoff (from our menu action or
// from `herdr-pi open`). The launch goes out only once the local turn has
// ended and the session is suspended.
function onHandoffOrder(id, order) {
	if (typeof id !== "string" || id === "") return;
	const a = findAttempt(typeof order.runId === "string" ? order.runId : "", order.sessionId);
	if (a && a.pending && typeof order.request === "string" && order.request === a.pending.request) return startTurn(a, id);
	if (a && a.inspectable) {
		send("handoff_error", id, { code: "busy", error: `${a.label} runs in Herdr already (fully inspectable mode)` });
		return;
	}
	if (!a || a.disposed) {
		send("handoff_error", id, { code: "not_live", error: `no live attempt with session ${String(order.sessionId)} in this workflow owner (pid ${process.pid})` });
		return;
	}
	if (a.handoff || a.idle) {
		send("handoff_error", id, { code: "busy", error: `a handoff of ${a.label} is under way already` });
		return;
	}
	if (!sessionFileOf(a.inner.reference)) {
		send("handoff_error", id, { code: "not_transferable", error: "the attempt has no session file to hand off" });
		return;
	}
	// A pane could not start the Pi this owner runs: refused now, before
	// the turn is cut and the session suspended for nothing.
	const runtime = piRuntime();
	if (runtime.error) {
		send("handoff_error", id, { code: "runtime", error: runtime.error });
		return;
	}
	const h = newHandoff(id);
	a.handoff = h;
	status(a, "handing off at the end of this turn");
	if (a.prompting) {
		// Cut at the next turn boundary, or now if no turn runs yet.
		if (!a.turnActive) cut(a, h);
		return;
	}
	// Nothing runs locally: hand off now; a prompt that comes meanwhile
	// waits for the handback.
	h.cut = true;
	a.idle = runHandoff(a, h)
		.catch(() => {})
		.finally(() => {
			a.idle = null;
		});
}

function newHandoff(id) {
	let finish;
	const handback = new Promise((resolve) => {
		finish = resolve;
	});
	const h = { id, cut: false, launched: false, suspended: false, cancelled: false, finished: false, paneState: "", handback };
	h.finish = (hb) => {
		if (h.finished) return;
		h.finished = true;
		finish(hb);
	};
	h.done = new Promise((resolve) => {
		h.markDone = resolve;
	});
	return h;
}

// refuse ends a handoff that never cut its turn.
function refuse(a, h, code, error) {
	if (a.handoff === h) a.handoff = null;
	send("handoff_error", h.id, { code, error });
	status(a, undefined);
	h.markDone();
}

// runAborted says why an attempt's run signal aborted, and whether it was
// its owner's session ending. The engine marks every run still going
// interrupted before it aborts them as the session shuts down (/quit, or a
// new session in its place); a run stopped by the person is "stopped".
function runAborted(a) {
	if (shared.interruptedRuns.has(a.runId)) return ["its owner Pi's session ended, which interrupted the workflow run", true];
	return ["the workflow run was cancelled", false];
}

// cancelHandoff: the owner gives up (run cancelled, attempt disposed). A
// handoff that has not cut its turn just ends; one that has asks the
// wrapper to close the pane and waits for the handback, for a while.
// sessionEnding tells the wrapper that nobody will take the attempt back:
// its owner's session is going (the wrapper says so as it would of an
// owner that went away, whichever of the two it hears first).
function cancelHandoff(a, reason, sessionEnding = false) {
	const h = a.handoff;
	if (!h || h.cancelled) return;
	h.cancelled = true;
	const data = { reason, sessionEnding };
	if (!h.cut) {
		a.handoff = null;
		send("handoff_cancel", h.id, data);
		status(a, undefined);
		h.markDone();
		return;
	}
	if (!send("handoff_cancel", h.id, data)) {
		h.finish({ reason: "aborted", transferred: h.launched, needsContinue: false, error: reason });
		return;
	}
	// No answer: whether the pane's Pi is gone is unknown, so a launched
	// pane counts as still running and the session is not reopened.
	const timer = setTimeout(
		() =>
			h.finish({
				reason: "aborted",
				transferred: h.launched,
				needsContinue: false,
				paneRunning: h.launched,
				error: `${reason}; the wrapper did not answer${h.launched ? ", and its Herdr pane's Pi may still write the session" : ""}`,
			}),
		cancelGraceMs,
	);
	timer.unref?.();
}

function onHandback(id, hb) {
	for (const a of shared.attempts.values()) {
		const h = a.handoff;
		if (!h || h.id !== id) continue;
		if (!h.cut) {
			// Withdrawn before the turn ended: nothing was suspended.
			a.handoff = null;
			status(a, undefined);
			send("resumed", id, { transferred: false, continued: false });
			h.markDone();
			return;
		}
		h.finish({
			reason: typeof hb.reason === "string" ? hb.reason : "aborted",
			transferred: hb.transferred === true,
			needsContinue: hb.needsContinue === true,
			paneRunning: hb.paneRunning === true,
			error: typeof hb.error === "string" ? hb.error : "",
			leftOpen: typeof hb.leftOpen === "string" ? hb.leftOpen : "",
		});
		return;
	}
	// Unknown (already over): say so, so a waiting wrapper is not stuck.
	send("resumed", id, { transferred: false, continued: false, error: "no such handoff in this owner" });
}

function onPaneState(id, data) {
	for (const a of shared.attempts.values()) {
		const h = a.handoff;
		if (!h || h.id !== id || typeof data.state !== "string") continue;
		if (data.state === "stopping") {
			// The pane closed but its Pi has not exited: the session comes
			// back once the wrapper has stopped it. How the pane's turn
			// ended (paneState) stays what it was.
			status(a, "handing back once its Herdr pane's Pi has stopped");
			continue;
		}
		h.paneState = data.state;
		if (data.state === "launched") h.launched = true;
		// Herdr's done is a turn that ended out of sight; the engine's
		// words for it are "completed" (reference §5.10).
		status(a, data.state === "launched" ? "working" : data.state === "done" ? "completed" : data.state);
	}
}

// runHandoff: the turn is cut (or none ran). Suspend, describe the launch,
// wait for the handback, resume, and say what the prompt must do next.
async function runHandoff(a, h) {
	const out = { transferred: false, continue: false, resumeError: undefined };
	const before = a.inner.getLastAssistant();
	let hb = { reason: "aborted", transferred: false, needsContinue: false };
	try {
		if (h.cancelled || a.disposed) return out;
		if (typeof a.inner.suspendForHandoff !== "function") {
			refuse(a, h, "internal", "this engine's sessions cannot be suspended");
			return out;
		}
		await a.inner.suspendForHandoff();
		h.suspended = true;
		if (h.cancelled || h.finished) {
			// Given up or withdrawn while the session was being suspended:
			// no launch; wait for the wrapper's word (or the grace period).
			hb = await h.handback;
			return out;
		}
		let launch;
		try {
			launch = h.turn !== undefined ? describeLaunch(a, false, before, h.turn) : describeLaunch(a, needsContinuation(before), before);
		} catch (e) {
			send("handoff_error", h.id, { code: e.code || "internal", error: errorText(e) });
			return out;
		}
		if (!fits("launch", h.id, launch)) {
			send("handoff_error", h.id, { code: "too_large", error: "the launch description does not fit in one line of the owner link" });
			return out;
		}
		if (!send("launch", h.id, launch)) return out; // the link is gone: linkLost ends the handoff
		status(a, "opening a Herdr pane");
		hb = await h.handback;
		out.transferred = hb.transferred === true;
	} catch (e) {
		send("handoff_error", h.id, { code: "internal", error: errorText(e) });
	} finally {
		if (h.suspended && hb.paneRunning === true) {
			// The pane's Pi could not be stopped and may still write the
			// session file: reopening it would make two writers. The
			// session stays suspended and the attempt fails instead.
			out.resumeError = new Error(`${a.label}: not resumed: ${hb.error || "its Herdr pane's Pi may still write the session"}`);
		} else if (h.suspended) {
			try {
				await a.inner.resumeFromHandoff();
			} catch (e) {
				out.resumeError = e;
			}
		}
		if (a.handoff === h) a.handoff = null;
		if (h.suspended || h.finished) {
			Object.assign(out, afterHandback(a, h, hb, before, out));
			send("resumed", h.id, {
				transferred: out.transferred,
				continued: out.continue,
				...(out.resumeError !== undefined ? { error: errorText(out.resumeError) } : {}),
			});
		}
		const shown = h.paneState === "done" ? "completed" : "idle";
		if (hb.leftOpen) {
			// Herdr would not close the pane: the session is back all the
			// same, but the person must close it (herdr-pi close). Said
			// once as a notice, and kept on the status line while the
			// attempt lives, not taken down with the handback's.
			notify(`${a.label}: ${hb.leftOpen}`, "warning");
			status(a, out.transferred ? `${shown}; ${hb.leftOpen}` : hb.leftOpen);
		} else status(a, out.transferred ? shown : undefined);
		if (out.transferred && !hb.leftOpen) {
			// Taken down only if still shown: the engine may have started
			// the attempt's next turn meanwhile, and its status stays.
			const shownNow = a.statusShown;
			setTimeout(() => {
				if (a.statusShown === shownNow) status(a, undefined);
			}, 50).unref?.();
		}
		h.markDone();
	}
	return out;
}

// afterHandback decides how the local session goes on (reference §5.10):
// it continues when the turn was cut mid-task, whether in the pane or here,
// unless the structured result was submitted; a reply that had already
// finished the task before the handoff stays the result.
function afterHandback(a, h, hb, before, out) {
	if (out.resumeError !== undefined) return {};
	// Given up by the owner (run stopped, attempt ended): nothing goes on.
	if (h.cancelled || a.disposed || a.signal?.aborted) return { continue: false };
	const last = a.inner.getLastAssistant();
	const result = a.prepared.resultTool;
	const submitted = a.resultSubmitted || (result !== undefined && calledTool(last, result.name));
	if (submitted) return { continue: false };
	if (h.turn !== undefined) {
		// A turn that ran in Herdr: nothing was cut, so only a reply that
		// is missing, aborted or ends on a tool call goes on (a provider
		// error stays one, for the engine to judge); a turn that never
		// launched is the prompt's to retry.
		const unfinished = !last || last.stopReason === "aborted" || hasToolCall(last);
		return { continue: out.transferred && (hb.needsContinue === true || unfinished) };
	}
	if (hb.needsContinue === true || needsContinuation(last)) return { continue: true };
	if (out.transferred && before && !needsContinuation(before)) a.sticky = before;
	return { continue: false };
}

// ---- fully inspectable mode ------------------------------------------------------

// inspectableTransport is the fully inspectable setup hook: with the mode
// on for this run (and a wrapper in Herdr to ask), the engine's local
// transport gives way to ours, "herdr", whose sessions run every prompt
// in a tab of the run's Herdr workspace. Inspections (mode "inspection")
// keep theirs, as the engine's own Herdr extension does.
function inspectableTransport(env, agent, context) {
	if (!context || context.mode === "inspection") return;
	const inner = agent.transport;
	if (!inner || inner.id !== "local" || typeof inner.createSession !== "function") return;
	if (!(shared.herdr && linked())) return;
	if (!runInspectable(env, context.run?.runId ?? "")) return;
	agent.transport = Object.freeze({
		id: "herdr",
		[WRAPPED]: true,
		async createSession(prepared, sessionContext) {
			const sctx = sessionContext || context;
			// The local session first (it owns the transcript file), then
			// suspended: until a prompt's tab gives it back, the pane's Pi
			// is the only writer of that file.
			const session = await inner.createSession(prepared, sctx);
			try {
				if (typeof session.suspendForHandoff === "function") await session.suspendForHandoff();
				else await session.abort();
			} catch (e) {
				await Promise.resolve()
					.then(() => session.dispose())
					.catch(() => {});
				throw e;
			}
			if (sctx?.run?.runId) shared.inspectableRuns.add(sctx.run.runId);
			return turnSession(session, prepared, sctx, context);
		},
	});
}

// breadcrumb names an attempt by its place in the run, for the tab label
// when the run's dashboard gives it no number.
export function breadcrumb(identity, attempt) {
	const parts = [
		...(Array.isArray(identity?.structuralPath) ? identity.structuralPath : []),
		identity?.parentBreadcrumb,
		identity?.worktreeOwner ? `worktree:${identity.worktreeOwner}` : "",
		identity?.callSite,
	].filter((p) => typeof p === "string" && p.trim());
	return `${parts.join(" > ")} #${attempt || 1}`;
}

// turnSession is the session the engine holds in fully inspectable mode:
// each prompt is one turn in a new tab (the first opens the run's
// workspace); concurrent prompts share the turn under way. After each
// turn the local session is resumed, and continued here when the pane's
// reply is missing, aborted or ends on a tool call.
function turnSession(inner, prepared, sctx, hookContext) {
	const a = newAttempt(inner, prepared, sctx);
	a.inspectable = true;
	a.pending = null; // { request, text, resolve }: asked, no order yet
	a.requests = new Set(); // this attempt's turn requests (their refusals are the prompt's to report)
	a.turn = null; // the turn under way
	// The tab is "#<n> <label>" only when the dashboard gives both.
	const tuiLabel = sctx?.tuiLabel ?? hookContext?.tuiLabel;
	if (!(typeof tuiLabel === "string" && tuiLabel.trim())) a.tuiIndex = 0;
	a.breadcrumb = breadcrumb(sctx?.identity ?? hookContext?.identity, a.attempt);
	const onAbort = () => {
		const [why, ending] = runAborted(a);
		if (a.handoff) cancelHandoff(a, why, ending);
		dropTurn(a, why);
	};
	a.signal?.addEventListener?.("abort", onAbort, { once: true });
	let disposal;
	const wrapped = {
		...inner,
		reference: { ...inner.reference, transport: "herdr" },
		getLastAssistant() {
			return inner.getLastAssistant();
		},
		prompt(text) {
			if (a.disposed) return Promise.reject(new Error(`${a.label}: its Herdr session is disposed`));
			if (a.turn) return a.turn;
			const t = runTurn(a, text).finally(() => {
				if (a.turn === t) a.turn = null;
			});
			a.turn = t;
			return t;
		},
		async abort() {
			// The turn's tab closes; the session comes back.
			if (a.handoff) cancelHandoff(a, "the agent's turn was aborted");
			dropTurn(a, "the agent's turn was aborted");
			await inner.abort();
		},
		dispose() {
			disposal ??= (async () => {
				a.disposed = true;
				dropTurn(a, "the attempt ended");
				if (a.handoff) cancelHandoff(a, "the attempt ended");
				if (a.turn) await a.turn.catch(() => {});
				if (a.handoff) await a.handoff.done;
				forgetAttempt(a, onAbort);
				await inner.dispose();
			})();
			return disposal;
		},
	};
	return holdAttempt(a, wrapped);
}

// runTurn runs one prompt in Herdr; a turn that could not launch is tried
// once more (not after dispose or cancellation), then fails with its
// error.
async function runTurn(a, text) {
	let out;
	for (let tries = 0; ; tries++) {
		out = await turnOnce(a, text);
		if (out.resumeError !== undefined) throw out.resumeError;
		if (out.transferred || out.cancelled) break;
		if (tries > 0 || a.disposed || a.signal?.aborted) throw new Error(`${a.label}: ${out.error || "the Herdr tab did not start Pi"}`);
	}
	if (out.continue && !a.disposed && !a.signal?.aborted) await a.inner.prompt(CONTINUE_LOCALLY);
	const last = a.inner.getLastAssistant();
	return last ? { assistant: last } : {};
}

// turnOnce asks the wrapper for a turn in Herdr and waits for it: the
// wrapper answers with a handoff order (startTurn), or refuses.
function turnOnce(a, text) {
	return new Promise((resolve) => {
		const request = `r${++shared.nextRequest}`;
		a.pending = { request, text, resolve };
		a.requests.add(request);
		status(a, "opening a Herdr tab");
		const sent = send("handoff_request", request, {
			runId: a.runId,
			attempt: a.attempt,
			sessionId: a.sessionId,
			label: a.label,
			turn: true,
			...(a.runId ? {} : { standalone: true }),
		});
		if (!sent) dropTurn(a, "herdr-pi's wrapper cannot be reached");
	});
}

// startTurn: the wrapper's order for the pending turn. Nothing runs
// locally (the session is suspended), so the launch goes out at once.
function startTurn(a, id) {
	const t = a.pending;
	a.pending = null;
	const h = newHandoff(id);
	h.turn = t.text;
	h.cut = true;
	a.handoff = h;
	const finish = h.finish;
	h.finish = (hb) => {
		if (!h.finished && hb && hb.error) h.error = hb.error; // why the turn did not run, for the prompt
		finish(hb);
	};
	runHandoff(a, h).then(
		(out) => t.resolve({ ...out, cancelled: h.cancelled, error: h.error }),
		(e) => t.resolve({ transferred: false, error: errorText(e) }),
	);
}

// dropTurn ends a turn asked for but not yet ordered.
function dropTurn(a, error) {
	const t = a.pending;
	if (!t) return;
	a.pending = null;
	status(a, undefined);
	t.resolve({ transferred: false, cancelled: a.disposed || Boolean(a.signal?.aborted), error });
}

// menuRefused: the wrapper refused the menu's live handoff request (or an
// inspection: no attempt asked it): the status line that said it was
// requested goes, unless a handoff of the attempt is under way (its own
// line stays).
// The person chose the action and waits to see something happen: the
// reason is said as a notice naming the attempt. One whose handoff is
// under way already is told where it is (the wrapper's words), which is
// news, not a failure.
function menuRefused(request, error) {
	const reason = shortNotice(error);
	for (const a of shared.attempts.values()) {
		if (a.asked !== request) continue;
		a.asked = undefined;
		if (a.handoff) return notify(`herdr-pi: ${shortNotice(a.label)}: ${reason}`, "info");
		status(a, undefined);
		return notify(`herdr-pi: ${shortNotice(a.label)} was not handed off: ${reason}`, "error");
	}
	notify(`herdr-pi: ${reason}`, "error");
}

// NOTICE_MAX is the most of a wrapper's text a notice shows: Pi's notice
// area is a line or two, not a log.
const NOTICE_MAX = 240;

// HARMFUL are the characters termtext.Harmful names in the Go code:
// controls (C0, DEL, C1; U+2028 and U+2029 break lines too), the bidi
// controls, and U+FFFD, what an invalid byte became.
const HARMFUL = /[\x00-\x1f\x7f-\x9f\u2028\u2029\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ufffd]/g;

// plainNotice makes text fit for one line of Pi's notice area or status
// line: terminal control sequences go; control characters, line
// separators, the bidi controls (which make the rest of a line read
// backwards) and U+FFFD (what an invalid byte became) become spaces, as
// termtext.Harmful says in the Go code; whitespace
// runs become one space. notify and status pass everything through it,
// text of our own and text from elsewhere (paths, keys of the engine's
// settings file, Herdr's messages, a run's names) alike.
export function plainNotice(text) {
	return String(text)
		.replace(/(?:\x1b\[|\u009b)[0-?]*[ -/]*[@-~]/g, "") // CSI
		.replace(/(?:\x1b\]|\u009d)[^\x07\x1b\u009c]*(?:\x07|\x1b\\|\u009c)?/g, "") // OSC
		.replace(/(?:\x1b[PX^_]|[\u0090\u0098\u009e\u009f])[^\x1b\u009c]*(?:\x1b\\|\u009c)?/g, "") // DCS, SOS, PM, APC
		.replace(/\x1b[ -/]*[0-~]?/g, "") // other escapes
		.replace(HARMFUL, " ")
		.replace(/\s+/g, " ")
		.trim();
}

// shortNotice is plainNotice for text from the wrapper in a notice: a
// long text is also cut, saying so.
export function shortNotice(text) {
	const plain = plainNotice(text);
	const chars = [...plain];
	return chars.length <= NOTICE_MAX ? plain : chars.slice(0, NOTICE_MAX - 1).join("").trimEnd() + "…";
}

// turnRefused: the wrapper refused a turn request (no Herdr, quitting,
// the launch failed before it started). The prompt reports it.
function turnRefused(request, error) {
	for (const a of shared.attempts.values()) {
		if (!a.requests?.has(request)) continue;
		if (a.pending?.request === request) dropTurn(a, error);
		return true;
	}
	return false;
}

// watchRuns tells the wrapper when a run whose agents ran in Herdr ends
// (completed, or a terminal state), so it closes the run's workspace.
const TERMINAL_RUN_STATES = new Set(["failed", "stopped", "interrupted", "budget_exhausted"]);
function watchRuns(pi) {
	const bus = pi.events;
	if (!bus || typeof bus.on !== "function" || shared.buses.has(bus)) return;
	shared.buses.add(bus);
	bus.on("workflow:run-completed", (e) => runEnded(e, "completed"));
	bus.on("workflow:run-state-changed", (e) => {
		if (!isObject(e) || typeof e.runId !== "string") return;
		// Heard before the engine aborts the run's agents (runAborted).
		if (e.state === "interrupted") shared.interruptedRuns.add(e.runId);
		else shared.interruptedRuns.delete(e.runId);
		if (TERMINAL_RUN_STATES.has(e.state)) runEnded(e, e.state);
	});
}

function runEnded(e, state) {
	const runId = isObject(e) ? e.runId : undefined;
	if (typeof runId !== "string") return;
	shared.runModes.delete(runId);
	if (!shared.inspectableRuns.delete(runId)) return;
	send("run_ended", undefined, { runId, state });
}

// ---- the launch description --------------------------------------------------

class LaunchError extends Error {
	constructor(code, message) {
		super(message);
		this.code = code;
	}
}

// describeLaunch is everything the pane's Pi needs to continue this session
// as the engine prepared it, as data: the wrapper writes the files,
// substitutes their paths and starts the command under `herdr-pi wrap`.
export function describeLaunch(a, continueTask, before, prompt) {
	const p = a.prepared;
	const s = a.inner;
	const runtime = piRuntime();
	if (runtime.error) throw new LaunchError("runtime", runtime.error);
	const sessionFile = sessionFileOf(s.reference);
	if (!sessionFile) throw new LaunchError("not_transferable", "the attempt has no session file to hand off");
	const files = [];
	const file = (name, content, prefix) => {
		files.push({ name, content });
		return prefix ? { file: name, prefix } : { file: name };
	};
	const model = `${p.model.provider}/${p.model.model}${p.model.thinking ? `:${p.model.thinking}` : ""}`;
	const bridged = [...(p.customTools ?? []), ...(p.resultTool ? [p.resultTool] : [])];
	const toolNames = [...new Set([...(p.tools ?? []), ...bridged.map((t) => t.name)])];

	const argv = [runtime.executable];
	if (runtime.entrypoint) argv.push(runtime.entrypoint);
	argv.push("--session", sessionFile, "--model", model);
	if (toolNames.length) argv.push("--tools", toolNames.join(","));
	else argv.push("--no-tools");
	if (p.systemPrompt !== undefined) argv.push("--system-prompt", file("system-prompt.md", p.systemPrompt));
	else if (p.systemPromptPath) argv.push("--system-prompt", p.systemPromptPath);
	if (p.systemPromptAppend) argv.push("--append-system-prompt", file("append-system-prompt.md", p.systemPromptAppend));
	if (p.contextFiles !== undefined) {
		const text = contextPrompt(safe(() => s.getHerdrContextFiles?.(), undefined) ?? []);
		if (text) argv.push("--append-system-prompt", file("context.md", text));
		argv.push("--no-context-files");
	}
	const loaded = safe(() => s.getHerdrResourcePaths?.(), undefined) ?? {};
	const strings = (v) => (Array.isArray(v) ? v.filter((x) => typeof x === "string" && x !== "") : []);
	const skills = [...new Set([...strings(p.additionalSkillPaths), ...strings(loaded.skills)])];
	if (p.resourcePolicy) argv.push("--no-skills");
	for (const path of skills) argv.push("--skill", path);
	if (p.resourcePolicy) {
		argv.push("--no-extensions");
		for (const path of new Set(strings(loaded.extensions))) argv.push("--extension", path);
	}
	if (bridged.length) argv.push("--extension", { toolBridge: true });
	const inline = inlineExtensions(p.extensionFactories);
	if (inline) argv.push("--extension", file("inline-extensions.mjs", inline));
	// The engine's tool timing, which it gives every local agent session
	// (and its own Herdr extension every pane): ours imports it from the
	// engine this owner runs. Without it the pane's tool calls go
	// untimed; the handoff goes on and the wrapper logs why.
	const notes = [];
	const timing = engineToolTiming(shared.pi);
	if (timing.module) argv.push("--extension", file("tool-timing.mjs", toolTimingExtension(timing.module)));
	else notes.push(`the pane's tool calls are not timed (no pi-workflows:tool-timing entries): ${timing.error}`);
	if (p.resourcePolicy?.projectTrusted === false) argv.push("--no-approve");
	else if (p.resourcePolicy?.projectTrusted === true) argv.push("--approve");
	if (continueTask) argv.push(CONTINUE_IN_PANE);
	// A turn's prompt, exactly as the engine framed it for the local
	// session, goes in a file (Pi's @file): a long prompt never makes the
	// command long.
	if (typeof prompt === "string") argv.push(file("prompt.md", prompt, "@"));

	const env = {};
	const dir = p.agentDir ?? process.env.PI_CODING_AGENT_DIR;
	if (dir) env.PI_CODING_AGENT_DIR = dir;
	if (process.env.PI_CODING_AGENT_SESSION_DIR) env.PI_CODING_AGENT_SESSION_DIR = process.env.PI_CODING_AGENT_SESSION_DIR;

	return {
		runId: a.runId,
		sessionId: a.sessionId,
		sessionFile,
		...(a.workflow ? { workflow: a.workflow } : {}),
		label: a.label,
		...(p.sessionLabel ? { sessionLabel: p.sessionLabel } : {}),
		...(a.attempt ? { attempt: a.attempt } : {}),
		...(a.tuiIndex ? { tuiIndex: a.tuiIndex } : {}),
		...(a.breadcrumb ? { breadcrumb: a.breadcrumb } : {}),
		model,
		toolNames,
		executable: runtime.executable,
		...(runtime.entrypoint ? { entrypoint: runtime.entrypoint } : {}),
		argv,
		env,
		cwd: p.cwd,
		files,
		tools: bridged.map(toolSpec),
		needsContinue: Boolean(continueTask),
		...(before && typeof before.stopReason === "string" ? { lastStopReason: before.stopReason } : {}),
		...(notes.length ? { notes } : {}),
	};
}

// ENGINE_PACKAGE is the workflow engine's npm name; TIMING_EXPORT the
// factory of its tool-timing extension, exported from its package index.
const ENGINE_PACKAGE = "pi-extensible-workflows";
const TIMING_EXPORT = "createToolTimingExtension";

// engineToolTiming finds the module of the engine loaded in this Pi that
// defines its tool-timing factory: { module } (an absolute path), or
// { error } saying why not. The engine is found through what it
// registered in this Pi (its /workflow command, its workflow tool: Pi
// tells each one's source file), its package through the nearest
// package.json named pi-extensible-workflows, the module through the
// package index's own re-export of the factory. The pane imports that
// module rather than the index: the index loads the whole engine (with
// its own copy of Pi, a second or two) and opens the engine's global
// registry, which would pass for a loaded engine in the pane.
export function engineToolTiming(pi) {
	try {
		const sources = [];
		for (const list of [safe(() => pi.getCommands(), []), safe(() => pi.getAllTools(), [])]) {
			for (const x of Array.isArray(list) ? list : []) {
				const path = isObject(x) && isObject(x.sourceInfo) ? x.sourceInfo.path : undefined;
				if (typeof path === "string" && path.startsWith("/") && !sources.includes(path)) sources.push(path);
			}
		}
		const root = sources.map(enginePackageRoot).find(Boolean);
		if (!root) return { error: `the workflow engine (${ENGINE_PACKAGE}) was not found among the sources of this Pi's commands and tools` };
		const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));
		const dot = isObject(pkg.exports) ? pkg.exports["."] : undefined;
		const entry = typeof dot === "string" ? dot : isObject(dot) ? [dot.import, dot.default].find((x) => typeof x === "string") : undefined;
		if (!entry) return { error: `${join(root, "package.json")} names no package index (exports ".")` };
		const index = resolve(root, entry);
		const source = readFileSync(index, "utf8");
		const m = /export\s*\{[^}]*\bcreateToolTimingExtension\b[^}]*\}\s*from\s*["'](\.{1,2}\/[^"']+)["']/.exec(source);
		if (!m) return { error: `the engine's index ${index} does not re-export ${TIMING_EXPORT} from a module of its own` };
		const module = resolve(dirname(index), m[1]);
		if (!readFileSync(module, "utf8").includes(TIMING_EXPORT)) return { error: `${module}, where the engine's index says ${TIMING_EXPORT} is, does not define it` };
		return { module };
	} catch (e) {
		return { error: `the workflow engine's tool timing could not be located: ${errorText(e)}` };
	}
}

// enginePackageRoot is the directory of the engine's package that file
// belongs to, if the nearest package.json above it is the engine's.
function enginePackageRoot(file) {
	for (let dir = dirname(file); ; dir = dirname(dir)) {
		const pkgPath = join(dir, "package.json");
		if (existsSync(pkgPath)) {
			const name = safe(() => JSON.parse(readFileSync(pkgPath, "utf8")).name, undefined);
			return name === ENGINE_PACKAGE ? dir : undefined;
		}
		if (dirname(dir) === dir) return undefined;
	}
}

// toolTimingExtension is the pane's extension module that installs the
// engine's own tool-timing extension, imported from module. Should the
// engine be gone by the time the pane's Pi starts, the pane runs untimed
// rather than failing.
export function toolTimingExtension(module) {
	return `// The workflow engine's tool timing in a workflow agent's Herdr pane, as the engine
// gives every local agent session (herdr-pi). The extension is the engine's own.
const engine = ${JSON.stringify(pathToFileURL(module).href)};
export default async function (pi) {
	let factory;
	try {
		factory = (await import(engine)).${TIMING_EXPORT};
	} catch {
		return;
	}
	if (typeof factory === "function") await factory()(pi);
}
`;
}

// contextPrompt renders the project context files the local session loaded
// (the pane runs with --no-context-files and gets exactly these).
export function contextPrompt(files) {
	const usable = (Array.isArray(files) ? files : []).filter((f) => isObject(f) && typeof f.path === "string" && typeof f.content === "string");
	if (!usable.length) return "";
	return (
		"# Project context\n\nInstructions for this project, from its context files:\n\n" +
		usable.map((f) => `## ${f.path}\n\n${f.content.trimEnd()}\n`).join("\n")
	);
}

// inlineExtensions materialises the engine's inline extension factories as
// one module. A factory travels as its source text, so it must not depend
// on variables it closed over; native ones cannot travel at all.
export function inlineExtensions(factories) {
	if (!Array.isArray(factories) || factories.length === 0) return "";
	const sources = factories.map((x) => {
		const f = typeof x === "function" ? x : isObject(x) && typeof x.factory === "function" ? x.factory : undefined;
		if (!f) throw new LaunchError("internal", "an inline extension of this agent is not a function");
		const src = Function.prototype.toString.call(f);
		if (src.includes("[native code]")) throw new LaunchError("internal", "an inline extension of this agent is native code and cannot move to a pane");
		return src;
	});
	return `// Inline extensions of a workflow agent, moved to its Herdr pane by herdr-pi.\nconst factories = [\n${sources.join(",\n")}\n];\nexport default async function (pi) {\n\tfor (const factory of factories) await factory(pi);\n}\n`;
}

export function toolSpec(t) {
	const spec = { name: t.name, label: typeof t.label === "string" && t.label ? t.label : t.name, description: typeof t.description === "string" ? t.description : "" };
	if (typeof t.promptSnippet === "string") spec.promptSnippet = t.promptSnippet;
	if (Array.isArray(t.promptGuidelines)) spec.promptGuidelines = t.promptGuidelines.filter((g) => typeof g === "string");
	if (isObject(t.parameters)) spec.parameters = JSON.parse(JSON.stringify(t.parameters));
	if (typeof t.renderShell === "string") spec.renderShell = t.renderShell;
	if (typeof t.executionMode === "string") spec.executionMode = t.executionMode;
	return spec;
}

// ---- bridged tool calls ---------------------------------------------------------

async function runTool(id, call) {
	if (typeof id !== "string" || id === "") return;
	let a;
	for (const x of shared.attempts.values()) if (x.handoff && x.handoff.id === call.handoff) a = x;
	if (!a) {
		send("tool_error", id, { error: `no handoff ${String(call.handoff)} is under way in this owner` });
		return;
	}
	const p = a.prepared;
	const def = [...(p.customTools ?? []), ...(p.resultTool ? [p.resultTool] : [])].find((t) => t.name === call.name);
	if (!def || typeof def.execute !== "function") {
		send("tool_error", id, { error: `unknown tool ${String(call.name)}` });
		return;
	}
	const controller = new AbortController();
	shared.calls.set(id, controller);
	try {
		const result = await def.execute(
			typeof call.toolCallId === "string" ? call.toolCallId : id,
			isObject(call.params) ? call.params : {},
			controller.signal,
			(partial) => {
				if (!send("tool_update", id, { value: jsonValue(partial) })) controller.abort();
			},
			toolContext(a, controller),
		);
		if (def === p.resultTool && !(isObject(result) && result.isError === true)) a.resultSubmitted = true;
		const value = jsonValue(result);
		if (fits("tool_result", id, { value })) send("tool_result", id, { value });
		else send("tool_error", id, { error: "the tool's result does not fit in one line of the owner link" });
	} catch (e) {
		send("tool_error", id, { error: errorText(e) || "the tool failed" });
	} finally {
		shared.calls.delete(id);
	}
}

function jsonValue(v) {
	if (v === undefined) return null;
	return JSON.parse(JSON.stringify(v, (_k, x) => (typeof x === "bigint" ? Number(x) : x)) ?? "null");
}

// toolContext is what a bridged tool gets as its context: the agent's model
// and registry, its cwd and trust, its transcript (read-only), and the
// call's signal. It has no UI: the person is in the pane.
function toolContext(a, controller) {
	const p = a.prepared;
	const models = safe(() => a.inner.getHerdrModelContext?.(), undefined) ?? {};
	let manager;
	return {
		ui: { notify() {}, setStatus() {}, setWorkingMessage() {}, confirm: async () => false, select: async () => undefined, input: async () => undefined },
		mode: "print",
		hasUI: false,
		cwd: p.cwd,
		get sessionManager() {
			if (manager === undefined) {
				manager = null;
				const file = sessionFileOf(a.inner.reference);
				const SessionManager = shared.sessionManager?.constructor;
				if (file && existsSync(file) && SessionManager && typeof SessionManager.open === "function") manager = safe(() => SessionManager.open(file, undefined, p.cwd), null);
			}
			return manager ?? undefined;
		},
		modelRegistry: models.modelRegistry,
		model: models.model,
		scopedModels: [],
		thinkingLevel: p.model.thinking,
		isIdle: () => false,
		isProjectTrusted: () => p.resourcePolicy?.projectTrusted ?? true,
		signal: controller.signal,
		abort: () => controller.abort(),
		hasPendingMessages: () => false,
		shutdown() {},
		getContextUsage: () => undefined,
		compact() {},
		getSystemPrompt: () => (typeof p.systemPrompt === "string" ? p.systemPrompt : ""),
	};
}

// ---- entry -------------------------------------------------------------------------

// setupHandoff is called by the probe for every load of the probe module.
// herdr says whether Pi runs inside a complete Herdr environment (the
// attempt actions show only there).
export function setupHandoff(pi, { herdr }) {
	if (!pi || typeof pi.on !== "function") return;
	// Outside Herdr (herdr false) the module still registers and answers
	// the wrapper's handoff orders, unlike the engine's own Herdr
	// extension, so that `herdr-pi open` in a Herdr pane can take over an
	// attempt of an owner in a plain terminal (docs/open.md, "An owner
	// outside Herdr"); its menu actions and fully inspectable mode need
	// herdr.
	shared.herdr = herdr === true;
	// The latest load's Pi: where the engine's commands and tools come from.
	shared.pi = pi;
	const env = process.env;
	// The engine loaded before us: its registry is open until its
	// session_start.
	safe(() => register(env));
	safe(() => watchRuns(pi));
	pi.on("session_start", (_event, ctx) => {
		try {
			const tui = ctx && (ctx.mode === "tui" || (ctx.mode === undefined && ctx.hasUI === true));
			if (!tui) return;
			shared.ui = ctx.ui;
			shared.sessionManager = ctx.sessionManager;
			register(env);
			reportEngine();
			checkSettings(env);
		} catch {}
	});
	// A workflow is about to start: a settings file the engine (and
	// fully inspectable mode) cannot use is said now, naming the file and
	// the key, not hidden behind the mode being off.
	pi.on("tool_call", (event) => {
		try {
			if (event && event.toolName === "workflow" && shared.ui) checkSettings(env);
		} catch {}
		return undefined;
	});
}

// checkSettings shows the person what in the engine's settings file keeps
// fully inspectable mode from being read.
function checkSettings(env) {
	const { error } = readInspectable(env);
	if (error) notify(`herdr-pi: ${error}. Fully inspectable mode stays off until it is fixed (herdr-pi doctor checks the file).`, "error");
}
