// A test extension standing in for plan-md and friends: commands that emit
// pi:waiting-for-user-input and open one of Pi's own dialogs.
export default function (pi) {
	pi.registerCommand("wait-on", {
		description: "open a wait",
		handler: async () => pi.events.emit("pi:waiting-for-user-input", { source: "test-ext", id: "w1", waiting: true }),
	});
	pi.registerCommand("wait-off", {
		description: "close the wait",
		handler: async () => pi.events.emit("pi:waiting-for-user-input", { source: "test-ext", id: "w1", waiting: false }),
	});
	pi.registerCommand("ask-confirm", {
		description: "open a confirm dialog",
		handler: async (_args, ctx) => {
			await ctx.ui.confirm("Deploy now?", "Really?");
		},
	});
}
