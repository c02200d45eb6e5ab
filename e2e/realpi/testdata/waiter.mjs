// A test extension standing in for plan-md and friends: commands that emit
// pi:waiting-for-user-input, open one of Pi's own dialogs, or start a run
// with a message of its own.
export default function (pi) {
	// The argument is the wait's id (w1 when none): one source may hold
	// several waits at once, as plan-md does, one per tool call.
	const id = (args) => (typeof args === "string" && args.trim() !== "" ? args.trim() : "w1");
	pi.registerCommand("wait-on", {
		description: "open a wait",
		handler: async (args) => pi.events.emit("pi:waiting-for-user-input", { source: "test-ext", id: id(args), waiting: true }),
	});
	pi.registerCommand("wait-off", {
		description: "close the wait",
		handler: async (args) => pi.events.emit("pi:waiting-for-user-input", { source: "test-ext", id: id(args), waiting: false }),
	});
	// A run no one answered into: the extension's own message starts it.
	pi.registerCommand("nudge", {
		description: "start a run with a custom message",
		handler: async () => pi.sendMessage({ customType: "test-ext", content: "go on", display: true }, { triggerTurn: true }),
	});
	pi.registerCommand("ask-region", {
		description: "open a select dialog",
		handler: async (_args, ctx) => {
			await ctx.ui.select("Which region?", ["eu", "us"]);
		},
	});
	pi.registerCommand("ask-confirm", {
		description: "open a confirm dialog",
		handler: async (_args, ctx) => {
			await ctx.ui.confirm("Deploy now?", "Really?");
		},
	});
}
