// A test extension: /two-dialogs opens two of Pi's dialogs at once, the
// second over the first while the first still waits, as two tool calls
// gated by a confirming extension do. Pi shows the newer one; answering it
// shows the first again.
export default function (pi) {
	pi.registerCommand("two-dialogs", {
		description: "open two dialogs at once",
		handler: async (_args, ctx) => {
			const first = ctx.ui.confirm("Deploy the first build?", "Really?");
			await new Promise((r) => setTimeout(r, 300));
			const second = ctx.ui.select("Which region second?", ["eu", "us"]);
			await Promise.all([first, second]);
		},
	});
}
