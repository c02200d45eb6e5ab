// A test extension: /resume-or-skip opens an extension's select, the
// question the workflow engine asks of a restarted owner ("interrupted
// workflow found": Resume / Skip).
export default function (pi) {
	pi.registerCommand("resume-or-skip", {
		description: "open a select dialog",
		handler: async (_args, ctx) => {
			await ctx.ui.select("1 interrupted workflow found", ["Resume: nightly (3f0c9a2e)", "Skip"]);
		},
	});
}
