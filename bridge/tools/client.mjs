// herdr-pi tool bridge client, generated for one live handoff.
//
// The workflow agent's custom tools run in the Pi that owns the run; this
// extension offers them to the Pi in this pane and sends every call there
// over a private unix socket (NDJSON, one connection per call):
//   → {"token","toolCallId","name","params"}
//   ← {"type":"update","value":…}*  then {"type":"result","value":…} or {"type":"error","error":"…"}
// Closing the connection aborts the call in the owner.
import { connect } from "node:net";

// Filled in by herdr-pi with a JSON string literal: {socket, token, tools}.
const DATA = JSON.parse("__HERDR_PI_TOOL_BRIDGE_DATA__");

const OPTIONAL = ["promptSnippet", "promptGuidelines", "outputSchema", "renderShell", "executionMode"];

function messageOf(err) {
	return err instanceof Error ? err.message : String(err);
}

function fail(name, what) {
	return new Error(`herdr-pi tool bridge: ${name}: ${what}`);
}

// callOwner runs one call in the owner and settles exactly once.
export function callOwner(socketPath, token, name, toolCallId, params, signal, onUpdate) {
	return new Promise((resolve, reject) => {
		if (signal?.aborted) {
			reject(fail(name, "aborted"));
			return;
		}
		let settled = false;
		let pending = "";
		let socket;
		const finish = (err, value) => {
			if (settled) return;
			settled = true;
			signal?.removeEventListener?.("abort", onAbort);
			// Destroying the socket is what tells the owner to cancel.
			socket?.destroy();
			if (err) reject(err);
			else resolve(value);
		};
		const onAbort = () => finish(fail(name, "aborted"));
		const onLine = (line) => {
			if (line.trim() === "") return;
			let msg;
			try {
				msg = JSON.parse(line);
			} catch {
				finish(fail(name, "the owner sent a line that is not JSON"));
				return;
			}
			if (msg?.type === "update") {
				try {
					onUpdate?.(msg.value);
				} catch {
					// A failing renderer must not end the call.
				}
			} else if (msg?.type === "result") {
				const v = msg.value;
				if (v === null || typeof v !== "object" || !Array.isArray(v.content)) {
					finish(fail(name, "the owner sent a malformed result"));
				} else {
					finish(undefined, v);
				}
			} else if (msg?.type === "error") {
				finish(new Error(typeof msg.error === "string" && msg.error !== "" ? msg.error : fail(name, "failed in the owner").message));
			}
		};
		try {
			signal?.addEventListener?.("abort", onAbort, { once: true });
			socket = connect(socketPath);
			socket.setEncoding("utf8");
			socket.on("connect", () => {
				socket.write(JSON.stringify({ token, toolCallId, name, params: params ?? {} }) + "\n");
			});
			socket.on("data", (chunk) => {
				pending += chunk;
				let i;
				while (!settled && (i = pending.indexOf("\n")) >= 0) {
					const line = pending.slice(0, i);
					pending = pending.slice(i + 1);
					onLine(line);
				}
			});
			let connected = false;
			socket.on("connect", () => {
				connected = true;
			});
			socket.on("error", (err) =>
				finish(
					fail(
						name,
						connected
							? `the connection to the workflow owner broke (${messageOf(err)}); the handoff may have ended`
							: `cannot reach the workflow owner (${messageOf(err)}); the handoff may have ended`,
					),
				),
			);
			socket.on("close", () => finish(fail(name, "the owner closed the connection before answering; the handoff may have ended")));
		} catch (err) {
			finish(fail(name, messageOf(err)));
		}
	});
}

function definition(spec) {
	const def = {
		name: spec.name,
		label: spec.label || spec.name,
		description: spec.description ?? "",
		parameters: spec.parameters,
		execute: (toolCallId, params, signal, onUpdate) =>
			callOwner(DATA.socket, DATA.token, spec.name, toolCallId, params, signal, onUpdate),
	};
	for (const key of OPTIONAL) {
		if (spec[key] !== undefined) def[key] = spec[key];
	}
	return def;
}

export default function herdrPiToolBridge(pi) {
	const failed = [];
	for (const spec of DATA.tools ?? []) {
		try {
			pi.registerTool(definition(spec));
		} catch (err) {
			failed.push(`${spec?.name}: ${messageOf(err)}`);
		}
	}
	if (failed.length === 0) return;
	// Say so in Pi's own UI once a session runs; never throw into Pi.
	try {
		pi.on("session_start", (_event, ctx) => {
			try {
				ctx?.ui?.notify?.(`herdr-pi could not offer bridged tools: ${failed.join("; ")}`, "error");
			} catch {
				// Nothing else to tell.
			}
		});
	} catch {
		// An old Pi without events: the tools are simply missing.
	}
}
