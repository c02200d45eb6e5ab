// A test extension standing in for @eko24ive/pi-ask and
// @xzzpig/pi-permission-system: each command emits on Pi's event bus what
// those extensions emit (payloads of notifications-and-sentinel.md D1.5),
// so the probe hears them as it would from the real ones.
const worker = { requesterAgentName: "Worker", requesterSessionId: "child-session" };
const forwardedDecision = (requestId) => ({
	forwarding: worker,
	requestId,
	responderSessionId: "parent-session",
	respondedAt: 1700000000000,
	resolution: "user_approved",
	result: "allow",
});

const commands = {
	// One flow announced twice: one flowId, one notification.
	"ask-start": (pi) => {
		pi.events.emit("@eko24ive/pi-ask:started", { flowId: "ask-1", title: "Choose deployment" });
		pi.events.emit("@eko24ive/pi-ask:started", { flowId: "ask-1", title: "Choose deployment" });
	},
	"ask-done": (pi) => pi.events.emit("@eko24ive/pi-ask:completed", { flowId: "ask-1" }),
	// pi-terminal-notifications' mirror of a flow that turns Pi blocked,
	// heard before the flow's own event (its listener ran first), and
	// its end before the flow's.
	"ask-mirrored": (pi) => {
		pi.events.emit("herdr:blocked", { active: true, label: "Choose deployment" });
		pi.events.emit("@eko24ive/pi-ask:started", { flowId: "ask-m", title: "Choose deployment" });
	},
	"ask-mirrored-done": (pi) => {
		pi.events.emit("herdr:blocked", { active: false });
		pi.events.emit("@eko24ive/pi-ask:completed", { flowId: "ask-m" });
	},
	// A prompt forwarded from a child session.
	"perm-forwarded": (pi) =>
		pi.events.emit("permissions:ui_prompt", {
			agentName: "Worker",
			forwarding: worker,
			message: "Allow git push?",
			requestId: "fwd-1",
			surface: "bash",
			value: "git push",
		}),
	// What must not close it: the child's own decision (no requestId), a
	// forwarded decision for another request. Then a second flow, whose
	// notification says both reached the wrapper (one socket, in order).
	"not-its-decisions": (pi) => {
		pi.events.emit("permissions:decision", { agentName: "Worker", resolution: "user_approved", surface: "bash", value: "git push" });
		pi.events.emit("permissions:forwarded_decision", forwardedDecision("other-request"));
		pi.events.emit("@eko24ive/pi-ask:started", { flowId: "ask-2", title: "Which region?" });
	},
	// The parent's own prompt, under no agent name: a decision of any
	// agent is of a compatible one.
	"perm-own": (pi) =>
		pi.events.emit("permissions:ui_prompt", { message: "Allow reading /etc/hosts?", requestId: "own-1", surface: "read", value: "/etc/hosts" }),
	"own-decision": (pi) => pi.events.emit("permissions:decision", { resolution: "user_approved", surface: "read", value: "/etc/hosts" }),
	// The child takes the parent's answer to fwd-1 and emits its own
	// decision; then a second flow, whose notification says it reached
	// the wrapper.
	"child-decision": (pi) => {
		pi.events.emit("permissions:decision", { agentName: "Worker", resolution: "user_approved", surface: "bash", value: "git push" });
		pi.events.emit("@eko24ive/pi-ask:started", { flowId: "ask-2", title: "Which region?" });
	},
	// A title that tries to end the notification early and start one of
	// its own (ESC, BEL, the 8-bit OSC, the field separator).
	"ask-hostile": (pi) =>
		pi.events.emit("@eko24ive/pi-ask:started", {
			flowId: "ask-3",
			title: "Deploy\u001b]777;notify;pwned;x\u0007 to\u009d   prod;\tnow\nsecond line",
		}),
	"ask2-done": (pi) => pi.events.emit("@eko24ive/pi-ask:completed", { flowId: "ask-2" }),
	"forwarded-decision": (pi) => pi.events.emit("permissions:forwarded_decision", forwardedDecision("fwd-1")),
	// A direct prompt, and the decision pi-permission-system emits for a
	// bash command outside the project (surface external_directory).
	"perm-direct": (pi) =>
		pi.events.emit("permissions:ui_prompt", {
			agentName: "Worker",
			forwarding: null,
			message: "Allow find?",
			requestId: "direct-1",
			surface: "bash",
			value: "find ~/.pi -name package.json",
		}),
	"direct-decision": (pi) =>
		pi.events.emit("permissions:decision", {
			agentName: "Worker",
			resolution: "user_approved_for_session",
			surface: "external_directory",
			value: "find ~/.pi -name package.json",
		}),
	// What the real extensions do: the event, then the question in one of
	// Pi's own dialogs (Pi announces it with ui_prompt_start), then the
	// answer.
	"perm-with-dialog": async (pi, ctx) => {
		pi.events.emit("permissions:ui_prompt", {
			forwarding: null,
			message: "Allow git status?",
			requestId: "dialog-1",
			surface: "bash",
			value: "git status",
		});
		const choice = await ctx.ui.select("Allow git status?", ["Allow", "Deny"]);
		pi.events.emit("permissions:decision", {
			resolution: choice === "Allow" ? "user_approved" : "user_denied",
			surface: "bash",
			value: "git status",
		});
	},
	"ask-with-dialog": async (pi, ctx) => {
		pi.events.emit("@eko24ive/pi-ask:started", { flowId: "ask-d", title: "Pick a region" });
		await ctx.ui.select("Which region do you deploy to?", ["eu", "us"]);
		pi.events.emit("@eko24ive/pi-ask:completed", { flowId: "ask-d" });
	},
	// What plan-md's request_user_input does: it says on the bus that it
	// waits for the person, asks in one of Pi's dialogs, and says the wait
	// is over once answered.
	"wait-with-dialog": async (pi, ctx) => {
		const wait = (waiting) => pi.events.emit("pi:waiting-for-user-input", { source: "plan-md:request_user_input", id: "call-1", waiting });
		wait(true);
		try {
			await ctx.ui.select("Which approach should I take?", ["small", "large"]);
		} finally {
			wait(false);
		}
	},
};

export default function (pi) {
	for (const [name, emit] of Object.entries(commands)) {
		pi.registerCommand(name, { description: "emit " + name, handler: async (_args, ctx) => emit(pi, ctx) });
	}
}
