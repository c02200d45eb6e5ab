// A test extension: once a run settled, it asks whether to commit, in one
// of Pi's dialogs — which Pi shows in place of its editor, under a reply
// that may itself ask a question.
export default function (pi) {
	pi.on("agent_settled", (_event, ctx) => {
		setTimeout(() => ctx.ui.confirm("Commit these changes?", "git commit -a"), 0);
	});
}
