// A test extension that marks the end of Pi's start-up on screen: its
// status ("started") shows in the footer once Pi has bound its extensions,
// and it is listed in Pi's full start-up listing like any extension.
export default function (pi) {
	pi.on("session_start", (_event, ctx) => {
		ctx.ui.setStatus("ready", "started");
	});
}
