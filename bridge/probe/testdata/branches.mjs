// Reads branches from stdin — a JSON array, each branch an array of Pi
// session entries from root to leaf — and prints, for each, whether the
// probe's reading says it waits for input: the test compares that with
// pane/session's reading of the same lines.
const mod = await import(process.argv[2]);
let input = "";
for await (const chunk of process.stdin) input += chunk;
const branches = JSON.parse(input);
process.stdout.write(JSON.stringify(branches.map((b) => mod.hasMarker(mod.lastUnansweredText(b)))));
