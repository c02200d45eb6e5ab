// A test extension standing in for pi-herdr-integration, if still
// installed: as a run's reply ends with the marker it emits herdr:blocked
// "input needed" on Pi's bus — here from agent_end, so the wrapper hears
// the mirror before the probe's agent_settled names the question — and
// clears it as the next run starts.
export default function (pi) {
	let blocked = false;
	pi.on("agent_end", async (event) => {
		const last = [...(event.messages ?? [])].reverse().find((m) => m.role === "assistant");
		const text = (last?.content ?? []).filter((c) => c.type === "text").map((c) => c.text).join("\n");
		if (!blocked && text.trimEnd().split(/\r?\n/).pop()?.trim() === ":input_needed:") {
			blocked = true;
			pi.events.emit("herdr:blocked", { active: true, label: "input needed" });
		}
	});
	pi.on("agent_start", async () => {
		if (blocked) {
			blocked = false;
			pi.events.emit("herdr:blocked", { active: false });
		}
	});
}
