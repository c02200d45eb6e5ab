// Loads a generated client extension with a stand-in for Pi's extension
// API, calls its tools against the Go server of the test, and prints one
// JSON object of what happened. argv: module URL, path of a socket that
// closes at once, path where no socket is.
const [modURL, closingSocket, missingSocket] = process.argv.slice(2);
const mod = await import(modURL);

const out = { definitions: [], calls: {}, injected: globalThis.pwned !== undefined };
const tools = new Map();
const pi = {
	registerTool(def) {
		const { execute, ...data } = def;
		out.definitions.push({ ...data, execute: typeof execute });
		tools.set(def.name, def);
	},
	on() {},
};
mod.default(pi);

// call runs one tool the way Pi would and records updates and outcome.
async function call(name, params, { signal, abortAfterUpdate, throwingUpdate } = {}) {
	const updates = [];
	const controller = new AbortController();
	const onUpdate = (partial) => {
		updates.push(partial);
		if (abortAfterUpdate) controller.abort();
		if (throwingUpdate) throw new Error("renderer broke");
	};
	try {
		const result = await tools.get(name).execute(`id-${name}`, params, signal ?? controller.signal, onUpdate, {});
		return { updates, result };
	} catch (err) {
		return { updates, error: err.message };
	}
}

out.calls.echo = await call("echo", { text: "hi" });
out.calls.fail = await call("fail", {});
out.calls.throwingUpdate = await call("echo", { text: "again" }, { throwingUpdate: true });
out.calls.abort = await call("slow", {}, { abortAfterUpdate: true });
const aborted = new AbortController();
aborted.abort();
out.calls.preAborted = await call("echo", { text: "never" }, { signal: aborted.signal });
out.calls.unknown = await mod.callOwner(
	process.env.BRIDGE_SOCKET,
	process.env.BRIDGE_TOKEN,
	"nope",
	"id-nope",
	{},
	undefined,
	undefined,
).then(
	(result) => ({ result }),
	(err) => ({ error: err.message }),
);
const direct = (socket) =>
	mod.callOwner(socket, "t", "echo", "id", {}, undefined, undefined).then(
		(result) => ({ result }),
		(err) => ({ error: err.message }),
	);
out.calls.earlyClose = await direct(closingSocket);
out.calls.missing = await direct(missingSocket);
out.injected = out.injected || globalThis.pwned !== undefined;
process.stdout.write(JSON.stringify(out));
