// herdr-pi launcher: starts Pi the way Pi's own CLI entry does, with the
// probe registered as a hidden inline extension — Pi's SDK entry
// main(args, { extensionFactories: [{ name, factory, hidden: true }] }).
// A probe passed with -e is listed in Pi's start-up header like any
// extension; a hidden inline one is not, so the start screen stays Pi's.
//
//   node [node options] herdr-pi-launch.mjs <Pi's cli.js> [Pi's arguments]
//
// herdr-pi uses it only for the two entry files it knows byte for byte
// (bridge/probe/launcher.go): Pi's bundled dist/bundle/cli.js, whose
// set-up (cli-runtime.js) is repeated below, and the unbundled
// dist/cli.js, whose set-up is imported. Should anything still not be as
// expected, Pi's own entry runs with the probe passed by -e: Pi always
// starts.

import { existsSync, readFileSync, realpathSync } from "node:fs";
import * as nodeModule from "node:module";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

import probe from "./herdr-pi-probe.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const entry = resolve(process.argv[2]);
// Pi sees the argv its own entry would: [node, <cli.js as invoked>, args…].
process.argv.splice(1, 2, entry);

const dir = dirname(realpathSync(entry));
const load = (file) => import(pathToFileURL(join(dir, file)).href);

async function start() {
	let main;
	if (existsSync(join(dir, "cli-runtime.js"))) {
		// dist/bundle/cli.js: enable the compile cache, then cli-runtime.js's
		// setupCli() and main().
		try {
			nodeModule.enableCompileCache?.(); // Node ≥ 22.1, as Pi 1.x requires
		} catch {}
		({ main } = await load("index.js"));
		if (typeof main !== "function") return false;
		let name = "pi";
		try {
			name = JSON.parse(readFileSync(join(dir, "..", "..", "package.json"), "utf8")).piConfig?.name || "pi";
		} catch {}
		process.title = name;
		process.env.PI_CODING_AGENT = "true";
		process.env.AI_AGENT = "pi";
		process.emitWarning = () => {};
	} else {
		// dist/cli.js: setupCli() from cli/setup.js, then main().
		const { setupCli } = await load("cli/setup.js");
		({ main } = await load("main.js"));
		if (typeof setupCli !== "function" || typeof main !== "function") return false;
		setupCli();
	}
	main(process.argv.slice(2), { extensionFactories: [{ name: "herdr-pi", factory: probe, hidden: true }] });
	return true;
}

let started = false;
try {
	started = await start();
} catch {}
if (!started) {
	process.argv.splice(2, 0, "-e", join(here, "herdr-pi-probe.mjs"));
	await import(pathToFileURL(entry).href);
}
