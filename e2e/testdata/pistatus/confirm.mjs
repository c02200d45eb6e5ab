// A test extension: /ask-confirm opens one of Pi's own dialogs, which Pi
// reports on its status channel as blocked (kind permission).
export default function (pi) {
	pi.registerCommand("ask-confirm", {
		description: "open a confirm dialog",
		handler: async (_args, ctx) => {
			await ctx.ui.confirm("Deploy now?", "Really?");
		},
	});
}
