// Drives probe.js with a stand-in for Pi's extension API and prints one
// JSON object of results. The Go test compares them with the reference
// vectors and reads the events the probe sent to its control socket.
const probePath = process.argv[2];
const mod = await import(probePath);
const out = {};

// A minimal Pi: handlers by event name, a bus, an optional transformer.
function fakePi({ transformer = true } = {}) {
	const handlers = new Map();
	const bus = new Map();
	const pi = {
		handlers,
		transformer: undefined,
		on(name, h) {
			(handlers.get(name) ?? handlers.set(name, []).get(name)).push(h);
		},
		events: {
			on(ch, h) {
				(bus.get(ch) ?? bus.set(ch, []).get(ch)).push(h);
			},
			emit(ch, data) {
				for (const h of bus.get(ch) ?? []) h(data);
			},
		},
		// What /name set; the probe reads it through getSessionName.
		sessionName: undefined,
		getSessionName() {
			return pi.sessionName;
		},
		async fire(name, event, ctx) {
			let result;
			for (const h of handlers.get(name) ?? []) result = (await h(event, ctx)) ?? result;
			return result;
		},
	};
	if (transformer) pi.registerMarkdownTransformer = (fn) => (pi.transformer = fn);
	return pi;
}
const ctx = (mode, branch = [], extra = {}) => ({
	...(mode === undefined ? {} : { mode }),
	hasUI: mode === "tui" || mode === "rpc" || extra.hasUI === true,
	cwd: "/proj",
	isIdle: () => true,
	sessionManager: { getBranch: () => branch, getSessionFile: () => "/s/one.jsonl", getSessionId: () => "sid" },
	...extra,
});
const assistant = (text) => ({ type: "message", id: "a1", message: { role: "assistant", content: [{ type: "text", text }] } });
const user = (text) => ({ type: "message", message: { role: "user", content: [{ type: "text", text }] } });
const pause = () => new Promise((r) => setTimeout(r, 50));
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
// until waits for cond, 30 s at most (a loaded machine is slow, not stuck).
const until = async (cond) => {
	for (let i = 0; i < 600 && !cond(); i++) await sleep(50);
};
const probeState = () => globalThis[Symbol.for("herdr-pi.probe.v1")];
// answered: the probe's connection, if it has one, heard the wrapper's
// hello. Until then the wrapper may not have taken it: a probe that went
// away before would lose what it wrote (the wrapper's reply fails).
const answered = () => {
	const sock = probeState().sock;
	return !sock || sock.destroyed || sock.bytesRead > 0;
};

// D3.1
out.herdrEnv = [
	mod.isHerdrEnv({ HERDR_ENV: "1", HERDR_SOCKET_PATH: "/tmp/herdr.sock", HERDR_PANE_ID: "w1:p1" }),
	mod.isHerdrEnv({ HERDR_ENV: "1" }),
	mod.isHerdrEnv({ HERDR_ENV: "0", HERDR_SOCKET_PATH: "/tmp/herdr.sock", HERDR_PANE_ID: "w1:p1" }),
	mod.isHerdrEnv({ HERDR_ENV: "1", HERDR_SOCKET_PATH: " ", HERDR_PANE_ID: "w1:p1" }),
];
out.append = mod.appendInstruction("base prompt");
out.appendTwice = mod.appendInstruction(out.append);
out.appendEmpty = mod.appendInstruction("");
out.marker = [
	mod.hasMarker("Please choose one.\n\n:input_needed:"),
	mod.hasMarker("Please choose one.\r\n  :input_needed:  \r\n"),
	mod.hasMarker("The marker is :input_needed: when input is required."),
	mod.hasMarker(":input_needed:\nAdditional text"),
];
out.question = [
	mod.questionOf("\n  \nWhich file?\nmain.go or util.go\n:input_needed:"),
	mod.questionOf(":input_needed:"),
	mod.questionOf("Which file?\nno marker"),
	mod.questionOf("x".repeat(600) + "\n:input_needed:").length,
	mod.questionOf("I looked at the repository and found two candidates.\n\nWhich one should I edit: `main.go` or `app.go`?\n:input_needed:"),
	mod.questionOf("Which file should I edit?\n\n- main.go\n- app.go\n:input_needed:"),
	mod.questionOf("Done with the schema.\n\n**Should I also migrate the data?**\n\n:input_needed:"),
	mod.questionOf("I ran the tests; two fail.\n\nTell me which one to fix first.\nThe log is above.\n:input_needed:"),
	mod.questionOf("Here is the plan:\n```js\nconst ok = a ? b : null; // why?\n```\nPlease confirm the plan.\n:input_needed:"),
	mod.questionOf("Fertig.\n\n¿Qué archivo edito?\r\n:input_needed:"),
	mod.questionOf("完成了。\n要修改哪个文件？\n:input_needed:"),
];
out.strip = [
	mod.stripMarker("Please choose one.\n\n:input_needed:\n"),
	mod.stripMarker("Please choose one.\n\n:input_", true),
	mod.stripMarker("Please choose one.\n\n:input_", false),
	mod.stripMarker("The marker is :input_needed: when input is required.", true),
];

// Pi's entry scripts, each with a PI_PACKAGE_DIR and the executable that
// ran it (node's own when empty), as the Go test laid them out: does the
// probe say that Pi tells it of its dialogs?
if (process.env.PI_ENTRIES) {
	out.tellsDialogs = JSON.parse(process.env.PI_ENTRIES).map(([entry, dir, execPath]) => mod.piTellsDialogs(entry, dir, execPath || undefined));
}

// Branches as Pi 1.6.0 writes them around its retries: a failed reply it
// schedules a retry for is left out of the model's view by a context_edit.
const failed = (id) => ({ type: "message", id, message: { role: "assistant", content: [], stopReason: "error" } });
const omit = (id) => ({ type: "context_edit", id: "x" + id, targetId: id, replacement: null });
const replied = (id) => ({ type: "message", id, message: { role: "assistant", content: [{ type: "text", text: "ok" }], stopReason: "stop" } });
out.retryCancelled = [
	mod.retryCancelled([user("hi"), failed("a1"), omit("a1")]), // Escape on the countdown
	mod.retryCancelled([user("hi"), failed("a1"), omit("a1"), failed("a2"), omit("a2")]), // on the second one
	mod.retryCancelled([user("hi"), failed("a1"), omit("a1"), failed("a2")]), // retries ran out
	mod.retryCancelled([user("hi"), failed("a1")]), // a failure Pi does not retry
	mod.retryCancelled([user("hi"), failed("a1"), omit("a1"), replied("a2")]), // a retry that worked
	mod.retryCancelled([user("hi"), failed("a1"), { type: "context_edit", targetId: "a1", replacement: { content: "x" } }]), // an edit, not a leave-out
	mod.retryCancelled([user("hi"), failed("a1"), omit("a0")]), // another entry left out
	mod.retryCancelled([failed("a1"), omit("a1"), user("again")]), // the person wrote since
	mod.retryCancelled(undefined),
];

// Loading never throws, whatever Pi hands over.
out.loadErrors = [];
for (const bad of [undefined, null, {}, { on: 5 }, { on() { throw new Error("boom"); } }, { on() {}, events: { on() { throw new Error("bus"); } } }]) {
	try {
		mod.default(bad);
	} catch (e) {
		out.loadErrors.push(String(e));
	}
}

const response = "Which runtime should I use?\n\n:input_needed:";
const scenario = process.env.SCENARIO;
if (scenario === "tui") {
	// D3.2 #2 and #4, then the event stream the wrapper gets.
	const pi = fakePi();
	mod.default(pi);
	await pi.fire("session_start", { reason: "startup" }, ctx("tui"));
	out.prompt = await pi.fire("before_agent_start", { systemPrompt: "base prompt" }, ctx("tui"));
	out.promptAgain = await pi.fire("before_agent_start", { systemPrompt: out.prompt.systemPrompt }, ctx("tui"));
	out.prefixes = [];
	for (let n = 1; n <= 14; n++) {
		out.prefixes.push(pi.transformer("Which runtime should I use?\n\n" + ":input_needed:".slice(0, n), { messageType: "assistant", isStreaming: true }));
	}
	out.full = pi.transformer(response, { messageType: "assistant", isStreaming: false });
	out.userMsg = pi.transformer(response, { messageType: "user", isStreaming: true });
	await pi.fire("agent_start", {}, ctx("tui"));
	pi.events.emit("pi:waiting-for-user-input", { source: "plan-md:request_user_input", id: "call-1", waiting: true });
	const circular = { requestId: "r1" };
	circular.self = circular;
	pi.events.emit("permissions:ui_prompt", circular);
	pi.events.emit("permissions:ui_prompt", { requestId: "r2", message: "x".repeat(100000) });
	pi.events.emit("herdr:blocked", { active: true, label: "deploy" });
	pi.events.emit("not:subscribed", { x: 1 });
	await pi.fire("ui_prompt_start", { reason: "ui_prompt", kind: "confirm", title: "Sure?" }, ctx("tui"));
	const branch = [user("hi"), assistant(response)];
	pi.sessionName = "auth refactor"; // a /name during the run
	await pi.fire("agent_end", { messages: [{ role: "user" }, { role: "assistant", stopReason: "stop" }] }, ctx("tui", branch));
	await pi.fire("agent_settled", { aborted: false }, ctx("tui", branch));
	// A /reload: a new instance takes over; the old one must go quiet,
	// even though its bus listeners stay registered (Pi 0.73.1).
	await pi.fire("session_shutdown", { reason: "reload" }, ctx("tui"));
	const pi2 = fakePi();
	pi2.events = pi.events; // the bus survives /reload
	pi2.sessionName = "auth refactor";
	mod.default(pi2);
	await pi2.fire("session_start", { reason: "reload" }, ctx("tui", branch));
	pi.events.emit("herdr:blocked", { active: false }); // heard by both instances, sent once
	await pi.fire("agent_start", {}, ctx("tui")); // stale instance: not sent
	await pi2.fire("session_shutdown", { reason: "quit" }, ctx("tui"));
} else if (scenario === "leaf") {
	// Pi 1.6.0's getLeafId: the probe names this Pi's leaf with the session,
	// each run's start, end and settle, and a move in the tree. A resync
	// mid-run repeats the run's start with the leaf as it is then.
	const pi = fakePi();
	mod.default(pi);
	let leaf = null; // an empty session
	const live = ctx("tui", [], { sessionManager: { getBranch: () => [], getSessionFile: () => "/s/one.jsonl", getSessionId: () => "sid", getLeafId: () => leaf } });
	await pi.fire("session_start", { reason: "startup" }, live);
	await pi.fire("agent_start", {}, live);
	leaf = "a1";
	await until(answered);
	probeState().sock.destroy();
	await until(() => probeState().connections > 1 && answered());
	await pi.fire("agent_end", { messages: [] }, live);
	await pi.fire("agent_settled", { aborted: false }, live);
	leaf = "u1";
	await pi.fire("session_tree", { newLeafId: "u1", oldLeafId: "a1" }, live);
	await pi.fire("session_shutdown", { reason: "quit" }, live);
} else if (scenario === "subsession") {
	// An in-process sub-session (an SDK session an extension runs, no UI)
	// loads the probe as well while the root TUI session runs: only the
	// root speaks, guides its model and hides the marker.
	const pi = fakePi();
	mod.default(pi);
	await pi.fire("session_start", { reason: "startup" }, ctx("tui"));
	const sub = fakePi();
	sub.events = pi.events;
	mod.default(sub);
	const branch = [user("hi"), assistant(response)];
	await sub.fire("session_start", { reason: "startup" }, ctx("print"));
	out.prompt = (await sub.fire("before_agent_start", { systemPrompt: "base prompt" }, ctx("print"))) ?? null;
	await sub.fire("agent_start", {}, ctx("print"));
	await sub.fire("agent_end", { messages: [{ role: "assistant", stopReason: "stop" }] }, ctx("print", branch));
	await sub.fire("agent_settled", { aborted: false }, ctx("print", branch));
	await sub.fire("session_shutdown", { reason: "quit" }, ctx("print"));
	out.promptAgain = (await pi.fire("before_agent_start", { systemPrompt: "base prompt" }, ctx("tui"))) ?? null;
	out.full = pi.transformer(response, { messageType: "assistant", isStreaming: false });
	await pi.fire("agent_start", {}, ctx("tui"));
	await pi.fire("session_shutdown", { reason: "quit" }, ctx("tui"));
} else if (scenario === "wide") {
	// Payloads the wrapper's byte-counted line limit must not cost: many
	// long strings of three-byte characters (few JavaScript characters,
	// many bytes), and a circular herdr:blocked.
	const pi = fakePi();
	mod.default(pi);
	await pi.fire("session_start", { reason: "startup" }, ctx("tui"));
	const wide = "確".repeat(2000);
	pi.events.emit("permissions:ui_prompt", { requestId: "wide", message: wide, details: Array(12).fill(wide) });
	const loop = { active: true, label: "deploy" };
	loop.self = loop;
	pi.events.emit("herdr:blocked", loop);
	pi.events.emit("@eko24ive/pi-ask:started", { flowId: "f1", title: "Which?" });
	await pi.fire("session_shutdown", { reason: "quit" }, ctx("tui"));
} else if (scenario === "rpc" || scenario === "outside") {
	// D3.3 #3 (rpc) and D3.2 #1 (no complete Herdr environment).
	const pi = fakePi();
	mod.default(pi);
	const mode = scenario === "rpc" ? "rpc" : "tui";
	await pi.fire("session_start", { reason: "startup" }, ctx(mode));
	out.prompt = (await pi.fire("before_agent_start", { systemPrompt: "base prompt" }, ctx(mode))) ?? null;
	out.transformer = pi.transformer ? pi.transformer(response, { messageType: "assistant", isStreaming: false }) : null;
	await pi.fire("agent_start", {}, ctx(mode));
	pi.events.emit("herdr:blocked", { active: true });
} else if (scenario === "old") {
	// Pi 0.73.1: no ctx.mode, no transformer API; hasUI decides.
	const pi = fakePi({ transformer: false });
	mod.default(pi);
	await pi.fire("session_start", { reason: "startup" }, ctx(undefined, [], { hasUI: true }));
	out.prompt = await pi.fire("before_agent_start", { systemPrompt: "base prompt" }, ctx(undefined));
	await pi.fire("agent_end", { messages: [], stopReason: "error" }, ctx(undefined, [assistant("x\n:input_needed:"), user("answer")]));
} else if (scenario === "reconnect") {
	// The wrapper loses the connection mid-run, with a dialog open, and Pi
	// says nothing for a while: the probe connects again by itself and
	// repeats what the wrapper lost. Pi's context is live (its getters read
	// the session as it is now), so one context and one branch serve.
	const pi = fakePi();
	mod.default(pi);
	const branch = [];
	const live = ctx("tui", branch);
	const lose = async () => {
		const n = probeState().connections;
		await until(answered);
		probeState().sock.destroy();
		await until(() => probeState().connections > n && answered());
	};
	await pi.fire("session_start", { reason: "startup" }, live);
	await pi.fire("agent_start", {}, live);
	await pi.fire("ui_prompt_start", { kind: "confirm", title: "Sure?" }, live);
	await lose();
	await pi.fire("ui_prompt_end", { kind: "confirm", title: "Sure?" }, live);
	branch.push(user("hi"), assistant(response));
	const settling = performance.now();
	await pi.fire("agent_settled", { aborted: false }, live);
	// Lost again while idle: the session is repeated with what its branch
	// waits for now, and how long ago its run ended, and no run or dialog
	// comes with it.
	await lose();
	out.endedAtMostMillisAgo = performance.now() - settling;
	await pi.fire("session_shutdown", { reason: "quit" }, live);
	// After a quit there is nothing to repeat: no new connection.
	await until(answered);
	probeState().sock.destroy();
	await sleep(1500);
	out.connectedAfterQuit = probeState().sock !== null;
} else if (scenario === "kept") {
	// The connection is lost with pi-ask questions open, and the wrapper
	// cannot be reached for a while: the channel events of that while
	// are kept, and written right after the resync of the connection the
	// probe makes next; beyond their bound, the oldest go and the wrapper
	// is told how many.
	const pi = fakePi();
	mod.default(pi);
	const live = ctx("tui", []);
	// down: the wrapper's end of the connection is gone, and the probe's
	// next try (made at once, for the event that follows) dies before it
	// connects, so nothing can connect for a second.
	const down = () => {
		probeState().sock.destroy();
		pi.events.emit("@eko24ive/pi-ask:completed", { flowId: "f1" }); // dials anew: written, never taken
		probeState().sock.destroy();
	};
	await pi.fire("session_start", { reason: "startup" }, live);
	pi.events.emit("@eko24ive/pi-ask:started", { flowId: "f1", title: "Which?" });
	pi.events.emit("@eko24ive/pi-ask:started", { flowId: "f2", title: "Where?" });
	await until(answered);
	down();
	pi.events.emit("permissions:ui_prompt", { requestId: "r1", message: "Allow git push?" });
	const kept = () => (probeState().kept ?? []).length;
	out.keptWhileDown = kept();
	await sleep(1100);
	pi.events.emit("herdr:blocked", { active: true, label: "deploy" }); // connects: resync, then the kept
	await until(() => answered() && kept() === 0);
	down();
	for (let i = 0; i < 200; i++) pi.events.emit("pi:waiting-for-user-input", { source: "s", id: "w" + i, waiting: i % 2 === 0 });
	out.keptAtMost = kept();
	// This time the dial in down() waited for the last one's second, so
	// the wrapper hung up on a live connection: the probe dials again by
	// itself a second later (resync, word of the dropped, the kept). Pi's
	// next event waits for that connection to be answered; fired after a
	// fixed sleep, it raced the redial and its answer on a loaded machine.
	const conns = probeState().connections;
	await until(() => probeState().connections > conns && answered() && kept() === 0);
	await pi.fire("agent_start", {}, live);
	await pi.fire("session_shutdown", { reason: "quit" }, live);
} else if (scenario === "repeat") {
	// The wrapper answers a connection and reads the channel event written
	// on it, and the connection fails before the probe has heard the
	// answer (Pi held Node's loop; here its socket is paused): the probe
	// cannot know the event arrived, and writes it again on the connection
	// it makes next. The Go side says on stdin when the wrapper has the
	// event.
	const { createInterface } = await import("node:readline");
	const told = createInterface({ input: process.stdin })[Symbol.asyncIterator]();
	const pi = fakePi();
	mod.default(pi);
	const live = ctx("tui", []);
	const kept = () => (probeState().kept ?? []).length;
	await pi.fire("session_start", { reason: "startup" }, live);
	const first = probeState().sock;
	first.pause(); // the wrapper's answer stays unheard
	pi.events.emit("herdr:blocked", { active: true, label: "deploy" });
	await told.next(); // the wrapper has it
	out.keptWhileDown = kept();
	first.destroy(); // the probe connects again by itself a second later
	await until(() => probeState().sock !== null && probeState().sock !== first && answered() && kept() === 0);
	pi.events.emit("herdr:blocked", { active: false, label: "deploy" });
} else if (scenario === "stall") {
	// A wrapper that takes the connection and then stops reading (the Go
	// side reads again once told on stderr). Pi must never wait for it,
	// and the probe's memory must stay bounded: past MAX_BACKLOG buffered
	// it drops Pi's events, and keeps the channel events; once the wrapper
	// has read what was buffered, the probe repeats what it needs (the
	// session, the run under way) and writes what it kept.
	const pi = fakePi();
	mod.default(pi);
	const live = ctx("tui", []);
	await pi.fire("session_start", { reason: "startup" }, live);
	await until(answered);
	const sock = probeState().sock;
	const failedReply = { messages: [{ role: "assistant", stopReason: "error", errorMessage: "x".repeat(2000) }] };
	out.maxBuffered = 0;
	const began = Date.now();
	for (let i = 0; i < 2000; i++) {
		await pi.fire("agent_end", failedReply, live);
		out.maxBuffered = Math.max(out.maxBuffered, sock.writableLength);
	}
	pi.events.emit("@eko24ive/pi-ask:started", { flowId: "f9", title: "Which?" });
	await pi.fire("agent_start", {}, live);
	out.floodMillis = Date.now() - began;
	process.stderr.write("stalled\n");
	await until(() => sock.writableLength === 0 && probeState().behind !== true && (probeState().kept ?? []).length === 0);
	out.sameConnection = probeState().sock === sock;
	await pi.fire("agent_settled", { aborted: false }, live);
	await pi.fire("session_shutdown", { reason: "quit" }, live);
} else if (scenario === "hangup") {
	// A wrapper that takes each connection and hangs up without a word:
	// the probe tries again on its own a few times, then waits for Pi.
	const pi = fakePi();
	mod.default(pi);
	const hungUp = () => probeState().sock === null || probeState().sock.destroyed;
	await pi.fire("session_start", { reason: "startup" }, ctx("tui"));
	await until(() => probeState().connections === 6 && hungUp()); // the first and five redials
	await sleep(1500); // no sixth
	await pi.fire("agent_start", {}, ctx("tui"));
	await until(hungUp);
	await sleep(1500); // and none after it
} else if (scenario === "retry") {
	// Escape on Pi's retry countdown: the run settles with the failed
	// reply last, left out for the retry that never came, and aborted
	// false. Then a reply that overflowed the context, left out for the
	// compaction that failed: not a cancelled retry.
	const pi = fakePi();
	mod.default(pi);
	await pi.fire("session_start", { reason: "startup" }, ctx("tui"));
	const cancelled = [user("hi"), failed("a1"), omit("a1")];
	await pi.fire("agent_start", {}, ctx("tui"));
	await pi.fire("agent_end", { messages: [{ role: "assistant", stopReason: "error", errorMessage: "503 overloaded" }] }, ctx("tui", cancelled));
	await pi.fire("agent_settled", { aborted: false }, ctx("tui", cancelled));
	await pi.fire("agent_start", {}, ctx("tui"));
	await pi.fire("agent_end", { messages: [{ role: "assistant", stopReason: "error", errorMessage: "400: context\nsecond line" }] }, ctx("tui", cancelled));
	await pi.fire("session_before_compact", { reason: "overflow" }, ctx("tui"));
	await pi.fire("session_compact_failed", { reason: "overflow", aborted: false, errorMessage: "no" }, ctx("tui"));
	await pi.fire("agent_settled", { aborted: false }, ctx("tui", cancelled));
	// The same, with Escape on the compaction: cancelled. A turn after
	// a cancelled compaction decides the run again.
	for (const turnAfter of [false, true]) {
		await pi.fire("agent_start", {}, ctx("tui"));
		await pi.fire("agent_end", { messages: [{ role: "assistant", stopReason: "error" }] }, ctx("tui", cancelled));
		await pi.fire("session_before_compact", { reason: "overflow" }, ctx("tui"));
		await pi.fire("session_compact_failed", { reason: "overflow", aborted: true }, ctx("tui"));
		if (turnAfter) {
			await pi.fire("agent_start", {}, ctx("tui"));
			await pi.fire("agent_end", { messages: [{ role: "assistant", stopReason: "stop" }] }, ctx("tui"));
		}
		await pi.fire("agent_settled", { aborted: false }, ctx("tui", turnAfter ? [] : cancelled));
	}
} else if (scenario === "nosocket") {
	const pi = fakePi();
	mod.default(pi);
	await pi.fire("session_start", { reason: "startup" }, ctx("tui"));
	await pi.fire("agent_start", {}, ctx("tui"));
	out.prompt = await pi.fire("before_agent_start", { systemPrompt: "" }, ctx("tui"));
}
await until(answered);
out.connections = probeState().connections;
console.log(JSON.stringify(out));
process.exit(0);
