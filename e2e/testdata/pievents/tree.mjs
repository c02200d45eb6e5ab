// A test extension for /tree without its selector: /tree-back moves the
// session to the entry before the last prompt (as /tree does when you pick
// it), which starts no run and writes nothing to the session file. (Moving
// to the prompt itself would put its text back in the editor.)
export default function (pi) {
	pi.registerCommand("tree-back", {
		description: "move to the entry before the last prompt",
		handler: async (_args, ctx) => {
			const sm = ctx.sessionManager;
			const prompt = sm.getBranch().findLast((e) => e.type === "message" && e.message.role === "user");
			if (prompt && prompt.parentId) await ctx.navigateTree(prompt.parentId);
		},
	});
}
