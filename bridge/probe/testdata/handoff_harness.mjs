// Runs herdr-pi's handoff module under node with a stand-in workflow
// engine registry and a stand-in Pi, and prints what it observed as JSON.
// SCENARIO picks the case; argv[2] is the module's file URL.

const REGISTRY_KEY = Symbol.for("pi-extensible-workflows.workflow-registry");
const scenario = process.env.SCENARIO;
const out = {};

// A stand-in of the engine's registry api: the checks that matter here
// (frozen, allowed keys, version, headline) and the action list.
function fakeRegistry({ frozen = false, actions = {}, hooks = [] } = {}) {
	const registered = [];
	const api = {
		frozen,
		register(ext) {
			if (this.frozen) throw Object.assign(new Error("Workflow extension registration is closed after session_start"), { code: "REGISTRY_FROZEN" });
			const allowed = ["version", "headline", "description", "functions", "modelAliases", "agentSetupHooks", "agentAttemptActions", "roleDirectories"];
			if (Object.keys(ext).some((k) => !allowed.includes(k)) || !/^\d+\.\d+\.\d+$/.test(ext.version) || !ext.headline.trim()) throw new Error("INVALID_METADATA");
			registered.push(ext);
			Object.assign(actions, ext.agentAttemptActions ?? {});
			for (const [name, h] of Object.entries(ext.agentSetupHooks ?? {})) hooks.push({ name, priority: h.priority ?? 10, setup: h.setup });
		},
		agentAttemptActions: () => Object.freeze({ ...actions }),
		agentSetupHooks: () => [...hooks].sort((a, b) => a.priority - b.priority),
	};
	return { host: { api, activeHosts: 0 }, registered };
}

function fakePi() {
	const handlers = {};
	const listeners = {};
	return {
		handlers,
		// Pi's event bus: listeners called at once, in order.
		events: {
			on(channel, f) {
				(listeners[channel] ??= []).push(f);
			},
			emit(channel, data) {
				for (const f of listeners[channel] ?? []) f(data);
			},
		},
		on(name, f) {
			(handlers[name] ??= []).push(f);
		},
		async start(ctx) {
			for (const f of handlers.session_start ?? []) await f({ reason: "startup" }, ctx);
		},
	};
}

const statuses = [];
// waitStatus waits until the last status line shown ends with text.
async function waitStatus(text) {
	for (let i = 0; i < 1500; i++) {
		const last = statuses.at(-1)?.[1];
		if (typeof last === "string" && last.endsWith(text)) return;
		await new Promise((r) => setTimeout(r, 20));
	}
	throw new Error(`no status ending ${text}: ${JSON.stringify(statuses)}`);
}
const ui = { setStatus: (k, v) => statuses.push([k, v]), notify() {} };
const tui = { mode: "tui", hasUI: true, ui, sessionManager: {} };

// startOwner loads the probe's handoff module as the owner Pi inside Herdr
// does, on the registry given, and waits until it is linked to its
// wrapper (the Go test).
// OUTSIDE=1: the owner runs outside Herdr (its wrapper still links).
let ownerPi; // the stand-in Pi of the latest startOwner
async function startOwner(load, reg) {
	globalThis[REGISTRY_KEY] = reg.host;
	const m = await load();
	const pi = fakePi();
	m.setupHandoff(pi, { herdr: process.env.OUTSIDE !== "1" });
	await pi.start(tui);
	for (let i = 0; i < 500 && !m.linked(); i++) await new Promise((r) => setTimeout(r, 20));
	ownerPi = pi;
	return m;
}

// localTransport stands in for the engine's local transport: its sessions
// answer with reply and note in log what was done to them.
function localTransport(log, reply) {
	return {
		id: "local",
		async createSession() {
			log.push("create");
			return {
				// NO_FILE=1: a session with no transcript file to hand off.
				reference: { transport: "local", sessionId: "s1", ...(process.env.NO_FILE === "1" ? {} : { locator: { sessionFile: "/tmp/s1.jsonl" } }) },
				subscribe() {},
				getLastAssistant: () => reply,
				getState: () => ({ tools: [] }),
				suspendForHandoff: async () => log.push("suspend"),
				resumeFromHandoff: async () => log.push("resume"),
				prompt: async (text) => log.push(`local:${text}`),
				abort: async () => log.push("abort"),
				dispose: async () => log.push("dispose"),
			};
		},
	};
}

// liveAttempt is an attempt "finder" (LABEL: another) of run r on the engine's local
// transport with herdr-pi's live-session hook, as the engine makes it
// (reg must be linked already), its session log, and a timer that keeps
// node alive until the caller clears it.
async function liveAttempt(reg, signal) {
	const log = [];
	const reply = { role: "assistant", stopReason: "stop", content: [{ type: "text", text: "done" }] };
	const agent = { transport: localTransport(log, reply) };
	reg.host.api.agentSetupHooks().find((h) => h.name === "herdrPiLiveSessions").setup(agent, { run: { runId: "r" }, attempt: 1 });
	const alive = setInterval(() => {}, 1000);
	const session = await agent.transport.createSession({ cwd: process.cwd(), model: { provider: "p", model: "m" }, tools: ["read"], sessionLabel: "f:finder:attempt-1" }, { run: { runId: "r", workflow: { name: "f" } }, attempt: 1, tuiLabel: process.env.LABEL ?? "finder", signal });
	return { log, alive, session };
}

async function main() {
	const load = () => import(process.argv[2]);
	if (scenario === "engine-first" || scenario === "frozen" || scenario === "upstream") {
		const upstreamActions = {
			openSession: { label: "Open session in Herdr pane", visible: () => true, run() {} },
			openLiveSession: { label: "Open live session in Herdr pane", visible: () => true, run() {} },
		};
		const reg = fakeRegistry({ actions: scenario === "upstream" ? { ...upstreamActions } : {} });
		if (scenario !== "frozen") globalThis[REGISTRY_KEY] = reg.host;
		const m = await load();
		const pi = fakePi();
		m.setupHandoff(pi, { herdr: true });
		out.registeredAtLoad = reg.registered.length;
		if (scenario === "frozen") {
			// The engine loaded after us and closed its registry before our
			// session_start ran: too late.
			globalThis[REGISTRY_KEY] = reg.host;
			reg.host.api.frozen = true;
		}
		await pi.start(tui);
		out.registered = reg.registered.length;
		// The actions show only once the wrapper has accepted the link.
		for (let i = 0; i < (process.env.NO_OWNER ? 25 : 500) && !m.linked(); i++) await new Promise((r) => setTimeout(r, 20));
		out.linked = m.linked();
		const ext = reg.registered[0];
		if (ext) {
			out.keys = Object.keys(ext).sort();
			out.labels = Object.values(ext.agentAttemptActions).map((a) => a.label);
			out.hooks = Object.entries(ext.agentSetupHooks).map(([name, h]) => `${name}:${h.priority}`);
		}
		out.shown = Object.entries(reg.host.api.agentAttemptActions()).map(([name, a]) => `${name}=${a.label}`).sort();
		// Visibility on contexts the navigator would build.
		const actions = reg.host.api.agentAttemptActions();
		const inspect = Object.values(actions).find((a) => a.label === "Open session in Herdr pane");
		const live = Object.values(actions).find((a) => a.label === "Open live session in Herdr pane");
		if (inspect && live && scenario !== "upstream") {
			const settled = { run: { id: "r", cwd: process.cwd() }, agent: { id: "r:1", state: "completed", label: "x" }, attempt: { attempt: 1, setup: { cwd: "/nonexistent" } }, session: { sessionId: "s" } };
			out.inspectVisible = [
				inspect.visible(settled),
				inspect.visible({ ...settled, agent: { ...settled.agent, state: "running" } }),
				inspect.visible({ ...settled, session: undefined }),
				inspect.visible({ ...settled, run: { id: "r", cwd: "/nonexistent" } }),
				inspect.visible({ ...settled, liveSession: {} }),
			];
			// A live session the module does not hold (not made by its
			// transport) is not offered.
			out.liveVisibleForeign = live.visible({ ...settled, agent: { ...settled.agent, state: "running" }, liveSession: { reference: { locator: { sessionFile: "/f" } } }, prepared: {}, handoff: {} });
		}
		await new Promise((r) => setTimeout(r, 200)); // let the link flush
	} else if (scenario === "fully") {
		// An agent of a run, made the engine's way: every setup hook in
		// priority order (HOOKS=live: herdr-pi's live-session hook alone),
		// then the menu's visibility of both actions for it while it runs,
		// and for a settled attempt of the same run. The mode is whatever
		// PI_CODING_AGENT_DIR's settings say.
		// PROJECT_DIR: the owner, its run and the agent work there.
		const project = process.env.PROJECT_DIR || process.cwd();
		process.chdir(project);
		const withUpstream = process.env.UPSTREAM_HOOK === "1";
		const reg = fakeRegistry({ hooks: withUpstream ? [{ name: "fullyInspectable", priority: 10, setup() {} }] : [] });
		await startOwner(load, reg);
		const local = {
			id: "local",
			createSession: async () => ({
				reference: { transport: "local", sessionId: "s1", locator: { sessionFile: "/f.jsonl" } },
				subscribe() {},
				getLastAssistant() {},
				prompt: async () => ({}),
				suspendForHandoff: async () => {},
				resumeFromHandoff: async () => {},
				abort: async () => {},
				dispose: async () => {},
			}),
		};
		const agent = { transport: local };
		const context = { run: { runId: "r", workflow: { name: "f" }, cwd: project }, cwd: project, attempt: 1, tuiLabel: "a" };
		for (const h of reg.host.api.agentSetupHooks()) if (process.env.HOOKS !== "live" || h.name === "herdrPiLiveSessions") h.setup(agent, context);
		const session = await agent.transport.createSession({ cwd: project, model: { provider: "p", model: "m" }, tools: [], sessionLabel: "f:a:attempt-1" }, context);
		const actions = Object.values(reg.host.api.agentAttemptActions());
		const live = actions.find((a) => a.label === "Open live session in Herdr pane");
		const inspect = actions.find((a) => a.label === "Open session in Herdr pane");
		const running = { run: { id: "r", cwd: process.cwd() }, agent: { id: "r:1", state: "running" }, attempt: { attempt: 1 }, session: session.reference, liveSession: session, prepared: {}, handoff: {} };
		const settled = { run: { id: "r", cwd: process.cwd() }, agent: { id: "r:2", state: "completed", label: "b" }, attempt: { attempt: 1 }, session: { sessionId: "s2" } };
		out.liveVisible = live.visible(running);
		out.inspectVisible = [inspect.visible(running), inspect.visible(settled)];
		out.wrappedId = agent.transport.id;
		await session.dispose();
	} else if (scenario === "handed") {
		// A live attempt of the engine's local transport, idle: the
		// wrapper (the Go test) hands it off, says how the pane goes, and
		// hands it back. What the owner's status line showed is printed.
		const reg = fakeRegistry();
		const notes = [];
		ui.notify = (text, level) => notes.push(`${level}: ${text}`);
		await startOwner(load, reg);
		const { log, alive } = await liveAttempt(reg);
		// Until the session is back, or the handback is over without it
		// (its status line cleared).
		// DONE_FILE: the wrapper's word that it is over (when nothing here
		// shows it, as for a refused order).
		const done = () => Boolean(process.env.DONE_FILE) && process.getBuiltinModule("node:fs").existsSync(process.env.DONE_FILE);
		const over = () => log.includes("resume") || statuses.some(([, v]) => v === undefined) || done();
		for (let i = 0; i < 1500 && !over(); i++) await new Promise((r) => setTimeout(r, 20));
		// The handback's status line is cleared a moment later.
		await new Promise((r) => setTimeout(r, 300));
		clearInterval(alive);
		out.log = log;
		out.statusLines = statuses.map(([, v]) => (v === undefined ? "(cleared)" : v));
		out.notes = notes;
	} else if (scenario === "menu-busy") {
		// The wrapper (the Go test) hands the attempt off; while its pane
		// works, the person chooses the menu's live action on it, which
		// the wrapper answers with where the attempt is, and then hands
		// it back. What the status line showed is printed, and what the
		// owner was told.
		const reg = fakeRegistry();
		const notes = [];
		ui.notify = (text, level) => notes.push(`${level}: ${text}`);
		await startOwner(load, reg);
		const { log, alive, session } = await liveAttempt(reg);
		await waitStatus("working");
		const live = Object.values(reg.host.api.agentAttemptActions()).find((a) => a.label === "Open live session in Herdr pane");
		await live.run({ run: { id: "r" }, agent: { id: "r:1", state: "running", label: "finder" }, attempt: { attempt: 1 }, session: session.reference, liveSession: session, prepared: {}, handoff: {} });
		for (let i = 0; i < 1500 && !log.includes("resume"); i++) await new Promise((r) => setTimeout(r, 20));
		await new Promise((r) => setTimeout(r, 300));
		clearInterval(alive);
		out.log = log;
		out.notes = notes;
		out.statusLines = statuses.map(([, v]) => (v === undefined ? "(cleared)" : v));
	} else if (scenario === "settings-notice") {
		// The engine's settings file (the Go test wrote it) cannot be
		// used: what the owner is told at its start.
		const notes = [];
		ui.notify = (text, level) => notes.push(`${level}: ${text}`);
		await startOwner(load, fakeRegistry());
		out.notes = notes;
	} else if (scenario === "menu-refused") {
		// The menu's "Open live session in Herdr pane" on a live attempt,
		// which the wrapper (the Go test) refuses. What the owner's status
		// line showed is printed, and what it was told.
		const reg = fakeRegistry();
		const notes = [];
		ui.notify = (text, level) => notes.push(`${level}: ${text}`);
		await startOwner(load, reg);
		const { alive, session } = await liveAttempt(reg);
		const live = Object.values(reg.host.api.agentAttemptActions()).find((a) => a.label === "Open live session in Herdr pane");
		await live.run({ run: { id: "r" }, agent: { id: "r:1", state: "running", label: "finder" }, attempt: { attempt: 1 }, session: session.reference, liveSession: session, prepared: {}, handoff: {} });
		for (let i = 0; i < 500 && notes.length === 0; i++) await new Promise((r) => setTimeout(r, 20));
		await new Promise((r) => setTimeout(r, 100));
		clearInterval(alive);
		out.notes = notes;
		out.statusLines = statuses.map(([, v]) => (v === undefined ? "(cleared)" : v));
	} else if (scenario === "disposed") {
		// The workflow stops while its attempt is in a pane: the
		// engine disposes the session. The wrapper (the Go test) hears
		// the cancel, closes the pane and only then hands back; the local
		// session must not be disposed before that.
		const reg = fakeRegistry();
		const m = await startOwner(load, reg);
		// CANCEL_GRACE: how long the cancel waits for a handback here.
		if (process.env.CANCEL_GRACE) m.setCancelGrace(Number(process.env.CANCEL_GRACE));
		const { log, alive, session } = await liveAttempt(reg);
		// IDLE=1: handed off between turns, no prompt running.
		const prompted = process.env.IDLE === "1" ? Promise.resolve() : session.prompt("go").catch((e) => log.push(`prompt failed: ${e.message}`));
		await waitStatus("finder: working");
		log.push("disposing");
		await session.dispose();
		await prompted;
		clearInterval(alive);
		out.log = log;
		await new Promise((r) => setTimeout(r, 200)); // let the link flush
	} else if (scenario === "run-aborted") {
		// The engine aborts the run while its attempt is in a pane: as
		// the person stops it (RUN_STATE=stopped), or as the owner's
		// session shuts down (interrupted). Either way the engine says the
		// run's new state on Pi's bus before it aborts the run's agents.
		const reg = fakeRegistry();
		await startOwner(load, reg);
		const ac = new AbortController();
		const { log, alive, session } = await liveAttempt(reg, ac.signal);
		const prompted = session.prompt("go").catch((e) => log.push(`prompt failed: ${e.message}`));
		await waitStatus("finder: working");
		ownerPi.events.emit("workflow:run-state-changed", { runId: "r", previousState: "running", state: process.env.RUN_STATE });
		ac.abort();
		await prompted;
		clearInterval(alive);
		out.log = log;
		await new Promise((r) => setTimeout(r, 200)); // let the link flush
	} else if (scenario === "settings") {
		// The engine's settings file as the mode reads it, case by case
		// (a null case: no file). The file is written where herdr-pi's Go
		// reader looks (SETTINGS_FILE), so the probe must look there too.
		const { mkdirSync, writeFileSync, rmSync } = await import("node:fs");
		const { dirname } = await import("node:path");
		const m = await load();
		const file = process.env.SETTINGS_FILE;
		mkdirSync(dirname(file), { recursive: true });
		out.settings = [];
		for (const text of JSON.parse(process.env.CASES)) {
			rmSync(file, { force: true });
			if (text !== null) writeFileSync(file, text);
			out.settings.push(m.readInspectable(process.env));
		}
	} else if (scenario === "turns") {
		// Fully inspectable mode on: the engine's local transport gives
		// way to herdr-pi's; each prompt is a turn the wrapper (the Go
		// test) launches and hands back.
		const reg = fakeRegistry();
		await startOwner(load, reg);
		const log = [];
		const reply = { role: "assistant", stopReason: "stop", content: [{ type: "text", text: "done" }] };
		const local = localTransport(log, reply);
		const agent = { transport: local };
		const context = { run: { runId: "r", workflow: { name: "flow" } }, identity: { structuralPath: ["review", "nested"], callSite: "function:agent/foo" }, attempt: 3, signal: new AbortController().signal };
		const inspection = { transport: local };
		reg.host.api.agentSetupHooks().find((h) => h.name === "herdrPiFullyInspectable").setup(inspection, { ...context, mode: "inspection" });
		out.inspectionId = inspection.transport.id;
		reg.host.api.agentSetupHooks().find((h) => h.name === "herdrPiFullyInspectable").setup(agent, context);
		out.wrappedId = agent.transport.id;
		const prepared = { cwd: process.cwd(), model: { provider: "p", model: "m" }, tools: ["read"], sessionLabel: "flow:foo:attempt-3" };
		const session = await agent.transport.createSession(prepared, context);
		out.reference = session.reference.transport;
		const results = [];
		// The owner link's socket never keeps node alive: this does, until
		// the scenario ends.
		const alive = setInterval(() => {}, 1000);
		results.push(await session.prompt("FIRST " + "y".repeat(5000)));
		results.push(await session.prompt("SECOND"));
		results.push(...(await Promise.all([session.prompt("THIRD"), session.prompt("FOURTH")])));
		out.results = results.map((r) => r.assistant?.content?.[0]?.text ?? "");
		// A turn the engine aborts: its tab is asked to close.
		const held = session.prompt("HOLD");
		await waitStatus("working");
		// Past the moment an earlier turn's "idle" is taken down (50 ms):
		// the held turn still shows working.
		await new Promise((r) => setTimeout(r, 200));
		out.heldStatus = statuses.at(-1)?.[1] ?? null;
		await session.abort();
		await held;
		await session.dispose();
		clearInterval(alive);
		out.log = log;
		await new Promise((r) => setTimeout(r, 200)); // let the link flush
	} else if (scenario === "turn-disposed") {
		// Fully inspectable mode: the workflow stops while a turn works
		// in its tab, and the engine disposes the session without an
		// abort first. The tab must be closed (the wrapper's handback)
		// before the local session is disposed.
		const reg = fakeRegistry();
		await startOwner(load, reg);
		const log = [];
		const reply = { role: "assistant", stopReason: "stop", content: [{ type: "text", text: "done" }] };
		const agent = { transport: localTransport(log, reply) };
		const context = { run: { runId: "r", workflow: { name: "flow" } }, attempt: 1, signal: new AbortController().signal };
		reg.host.api.agentSetupHooks().find((h) => h.name === "herdrPiFullyInspectable").setup(agent, context);
		const session = await agent.transport.createSession({ cwd: process.cwd(), model: { provider: "p", model: "m" }, tools: ["read"], sessionLabel: "flow:foo:attempt-1" }, context);
		const alive = setInterval(() => {}, 1000);
		const held = session.prompt("HOLD").catch((e) => log.push(`prompt failed: ${e.message}`));
		await waitStatus("working");
		log.push("disposing");
		await session.dispose();
		await held;
		clearInterval(alive);
		out.log = log;
		await new Promise((r) => setTimeout(r, 200)); // let the link flush
	} else if (scenario === "turn-given-up") {
		// Fully inspectable mode: the wrapper gives the turn's order up
		// before its tab opens (herdr-pi close) and hands it back
		// untransferred; what the prompt does next is the result.
		const reg = fakeRegistry();
		await startOwner(load, reg);
		const log = [];
		const reply = { role: "assistant", stopReason: "stop", content: [{ type: "text", text: "done" }] };
		const agent = { transport: localTransport(log, reply) };
		const context = { run: { runId: "r", workflow: { name: "flow" } }, attempt: 1, signal: new AbortController().signal };
		reg.host.api.agentSetupHooks().find((h) => h.name === "herdrPiFullyInspectable").setup(agent, context);
		const session = await agent.transport.createSession({ cwd: process.cwd(), model: { provider: "p", model: "m" }, tools: ["read"], sessionLabel: "flow:foo:attempt-1" }, context);
		const alive = setInterval(() => {}, 1000);
		const results = [];
		try {
			results.push(await session.prompt("ONCE"));
		} catch (e) {
			log.push(`prompt failed: ${e.message}`);
		}
		out.results = results.map((r) => r.assistant?.content?.[0]?.text ?? "");
		await session.dispose();
		clearInterval(alive);
		out.log = log;
		await new Promise((r) => setTimeout(r, 200)); // let the link flush
	} else if (scenario === "fits") {
		// The wrapper counts the owner link's 16 MiB in bytes: six million
		// three-byte characters are 18 MB there, six million ASCII ones 6 MB.
		const m = await load();
		out.fits = [m.fits("launch", "h1", { text: "確".repeat(6_000_000) }), m.fits("launch", "h1", { text: "x".repeat(6_000_000) })];
	} else if (scenario === "timing") {
		// ENGINE_SOURCE is the file the engine's /workflow command comes
		// from (the Go test lays out a stand-in engine package around it);
		// OTHER_SOURCE a file of another package.
		const m = await load();
		const prepared = { cwd: "/work/proj", model: { provider: "openai", model: "gpt" }, tools: ["read"] };
		const inner = { reference: { transport: "local", sessionId: "s1", locator: { sessionFile: "/agent/sessions/s1.jsonl" } } };
		const a = { inner, prepared, runId: "run-1", sessionId: "s1", label: "reviewer" };
		const launchWith = (commands) => {
			const pi = fakePi();
			pi.getCommands = () => commands;
			pi.getAllTools = () => [{ name: "read", sourceInfo: { path: "<builtin:read>" } }];
			m.setupHandoff(pi, { herdr: false });
			return m.describeLaunch(a, false);
		};
		const other = { name: "other", sourceInfo: { path: process.env.OTHER_SOURCE } };
		out.untimedLaunch = launchWith([other]);
		out.timedLaunch = launchWith([other, { name: "workflow", sourceInfo: { path: process.env.ENGINE_SOURCE } }]);
		// The pane's module installs the engine's extension on the pane's Pi.
		const src = out.timedLaunch.files.find((f) => f.name === "tool-timing.mjs").content;
		const mod = await import("data:text/javascript," + encodeURIComponent(src));
		const seen = [];
		await mod.default({ on: (name) => seen.push(name) });
		out.inlineRan = seen;
		// An engine gone by the time the pane starts: the module installs
		// nothing and does not throw.
		const gone = m.toolTimingExtension("/nonexistent/tool-timing.js");
		const goneMod = await import("data:text/javascript," + encodeURIComponent(gone));
		const goneSeen = [];
		await goneMod.default({ on: (name) => goneSeen.push(name) });
		out.goneRan = goneSeen;
		if (process.env.ODD_SOURCE) out.oddLaunch = launchWith([{ name: "workflow", sourceInfo: { path: process.env.ODD_SOURCE } }]);
	} else if (scenario === "launch") {
		const m = await load();
		const named = async function (pi) {
			pi.on("session_start", () => {});
		};
		const prepared = {
			cwd: "/work/proj",
			model: { provider: "openai", model: "gpt", thinking: "high" },
			tools: ["read", "bash"],
			sessionLabel: "flow:reviewer:attempt-2",
			agentDir: "/agent",
			systemPrompt: "You review.",
			systemPromptAppend: "Be brief.",
			contextFiles: [{ scope: "project" }],
			additionalSkillPaths: ["/skills/a", "/skills/shared"],
			extensionFactories: [named, { factory: (pi) => pi.on("agent_start", () => {}) }],
			resourcePolicy: { projectTrusted: false },
			customTools: [{ name: "lookup", label: "Lookup", description: "Looks up.", promptSnippet: "lookup: a word", promptGuidelines: ["once"], parameters: { type: "object", properties: { q: { type: "string" } } }, execute() {} }],
			resultTool: { name: "workflow_result", label: "Workflow Result", description: "Submit.", parameters: { type: "object" }, execute() {} },
		};
		const inner = {
			reference: { transport: "local", sessionId: "s1", locator: { sessionFile: "/agent/sessions/s1.jsonl" } },
			getHerdrContextFiles: () => [{ path: "/work/proj/AGENTS.md", content: "Use tabs.\n" }],
			getHerdrResourcePaths: () => ({ extensions: ["/ext/one.ts", "/ext/two.ts", "/ext/one.ts"], skills: ["/skills/shared", "/skills/b"] }),
		};
		const a = { inner, prepared, runId: "run-1", sessionId: "s1", workflow: "flow", label: "reviewer", attempt: 2, tuiIndex: 3 };
		out.launch = m.describeLaunch(a, true, { role: "assistant", stopReason: "toolUse", content: [{ type: "toolCall", name: "bash" }] });
		out.quiet = m.describeLaunch({ ...a, prepared: { ...prepared, systemPrompt: undefined, systemPromptPath: "/agent/SYSTEM.md", systemPromptAppend: "", contextFiles: undefined, resourcePolicy: undefined, extensionFactories: undefined, customTools: undefined, resultTool: undefined, tools: [], additionalSkillPaths: undefined } }, false).argv;
		// The inline extensions travel as a module that runs each factory.
		const src = out.launch.files.find((f) => f.name === "inline-extensions.mjs").content;
		const mod = await import("data:text/javascript," + encodeURIComponent(src));
		const seen = [];
		await mod.default({ on: (name) => seen.push(name) });
		out.inlineRan = seen;
		try {
			m.inlineExtensions([Math.max]);
			out.native = "accepted";
		} catch (e) {
			out.native = e.message;
		}
		out.continuation = [
			m.needsContinuation(undefined),
			m.needsContinuation({ stopReason: "stop", content: [{ type: "text", text: "done" }] }),
			m.needsContinuation({ stopReason: "aborted", content: [{ type: "text", text: "part" }] }),
			m.needsContinuation({ stopReason: "toolUse", content: [{ type: "toolCall", name: "x" }] }),
			m.needsContinuation({ stopReason: "error", content: [] }),
			m.needsContinuation({ stopReason: "error", content: [{ type: "text", text: "rate limited" }] }),
		];
	}
	process.stdout.write(JSON.stringify(out));
	process.exit(0);
}

main().catch((e) => {
	process.stdout.write(JSON.stringify({ error: String(e && e.stack) }));
	process.exit(1);
});
