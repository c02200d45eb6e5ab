// A test extension: at Pi's start it asks the person before the session
// starts, as the workflow engine does when it finds an interrupted run
// ("1 interrupted workflow found" → Resume / Skip). Its session_start
// handler waits for the answer, and Pi runs the handlers of the extensions
// loaded after it — herdr-pi's probe among them — only then.
export default function (pi) {
	pi.on("session_start", async (_event, ctx) => {
		if (!ctx.hasUI) return;
		await ctx.ui.select("2 paused jobs found", ["Resume: nightly (3f0c9a2e)", "Skip"]);
	});
}
