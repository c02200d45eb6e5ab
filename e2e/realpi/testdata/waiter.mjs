// A test extension standing in for plan-md and friends: commands that emit
// pi:waiting-for-user-input and open one of Pi's own dialogs.
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
	pi.registerCommand("ask-confirm", {
		description: "open a confirm dialog",
		handler: async (_args, ctx) => {
			await ctx.ui.confirm("Deploy now?", "Really?");
		},
	});
}
