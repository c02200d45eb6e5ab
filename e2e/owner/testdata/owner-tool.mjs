// A test extension for the workflow owner: it gives every workflow agent an
// owner-only custom tool, herdr_lookup, through an agent setup hook that
// adds to sessionInput.customTools (the engine's supported way). It loads
// after the engine (its registry must exist) and writes what the tool does
// to HERDR_PI_TEST_TOOL_LOG, one line per step.
//
// Modes: "gate" waits until the file HERDR_PI_TEST_GATE exists (the test
// holds the agent's turn open with it); "abort" waits for its signal and
// fails when it fires; anything else answers at once. Every call sends one
// update before its result.

import { appendFileSync, existsSync } from "node:fs";

const log = (line) => appendFileSync(process.env.HERDR_PI_TEST_TOOL_LOG, line + "\n");
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const tool = {
	name: "herdr_lookup",
	label: "Lookup",
	description: "Looks a word up in the owner's private index.",
	promptSnippet: "herdr_lookup: look a word up",
	parameters: {
		type: "object",
		properties: { query: { type: "string" }, mode: { type: "string" } },
		required: ["query"],
		additionalProperties: false,
	},
	async execute(toolCallId, params, signal, onUpdate, ctx) {
		log(`start ${params.query} ${params.mode ?? ""} cwd=${ctx?.cwd ?? ""}`);
		if (params.mode === "gate") {
			while (!existsSync(process.env.HERDR_PI_TEST_GATE)) await sleep(20);
		}
		if (params.mode === "abort") {
			await new Promise((resolve) => {
				if (signal?.aborted) resolve();
				signal?.addEventListener("abort", resolve, { once: true });
			});
			log(`aborted ${params.query}`);
			throw new Error(`lookup of ${params.query} aborted by its signal`);
		}
		onUpdate?.({ content: [{ type: "text", text: `looking up ${params.query}` }], details: { step: 1 } });
		log(`end ${params.query}`);
		return { content: [{ type: "text", text: `answer for ${params.query}` }], details: { query: params.query } };
	},
};

// With HERDR_PI_TEST_LIFE_LOG set, every agent also gets an inline
// extension factory that logs its session's lifecycle there, one line per
// event: "<pid> <event> <reason>". Inline factories travel to a Herdr pane
// as their source text, so this one carries the log's path as a literal
// and imports nothing from this module.
const lifeLog = process.env.HERDR_PI_TEST_LIFE_LOG;
const lifeFactory = lifeLog
	? new Function(
			"pi",
			`const log = (line) => process.getBuiltinModule("node:fs").appendFileSync(${JSON.stringify(lifeLog)}, process.pid + " " + line + "\\n");
			pi.on("session_start", (e) => log("session_start " + (e?.reason ?? "")));
			pi.on("session_shutdown", (e) => log("session_shutdown " + (e?.reason ?? "")));`,
		)
	: undefined;

export default function ownerTool(pi) {
	const host = globalThis[Symbol.for("pi-extensible-workflows.workflow-registry")];
	if (!host) throw new Error("owner-tool.mjs must load after the workflow engine");
	host.api.register({
		version: "1.0.0",
		headline: "herdr-pi test: an owner-only tool",
		agentSetupHooks: {
			herdrPiTestTool: {
				setup(agent) {
					agent.sessionInput.customTools = [...(agent.sessionInput.customTools ?? []), tool];
					if (lifeFactory) agent.sessionInput.extensionFactories = [...(agent.sessionInput.extensionFactories ?? []), lifeFactory];
				},
			},
		},
	});
}
