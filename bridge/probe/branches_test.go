package probe

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/herdr-pi/herdr-pi/pane/session"
)

// The probe (at session start and settle) and pane/session (reading the
// file Pi left, when herdr-pi starts or Pi switches to it) must agree on
// whether a branch waits for input: one rule, notifications-and-sentinel.md
// §16 and §20. Each vector is a branch as Pi writes it, one session line per
// entry, root first; both readings get the same lines.
func TestProbeAndSessionFileReadBranchesAlike(t *testing.T) {
	const q = "Which runtime should I use?\n\n:input_needed:"
	id := 0
	line := func(role string, content any, stop string) string {
		id++
		m := map[string]any{"role": role, "content": content}
		if stop != "" {
			m["stopReason"] = stop
		}
		var parent any
		if id > 1 {
			parent = fmt.Sprintf("e%d", id-1)
		}
		b, _ := json.Marshal(map[string]any{"type": "message", "id": fmt.Sprintf("e%d", id), "parentId": parent, "message": m})
		return string(b)
	}
	text := func(s string) []any { return []any{map[string]any{"type": "text", "text": s}} }
	handOver := func(s string) []any {
		return append(text(s), map[string]any{"type": "toolCall", "id": "call-1", "name": "bash", "arguments": map[string]any{"command": "ls"}})
	}
	vectors := []struct {
		name  string
		build func() []string
		want  bool
	}{
		{"marker reply", func() []string { return []string{line("user", text("hi"), ""), line("assistant", text(q), "stop")} }, true},
		{"answered", func() []string {
			return []string{line("assistant", text(q), "stop"), line("user", text("Use Bun."), "")}
		}, false},
		{"aborted reply with the marker", func() []string { return []string{line("assistant", text(q), "aborted")} }, true},
		{"tool results passed over", func() []string {
			return []string{line("assistant", text(q), "stop"), line("toolResult", text("out"), ""), line("custom", text("x"), "")}
		}, true},
		// Pi killed, or the run aborted, while the tool of a reply that
		// ends with the marker ran: restored as blocked by both.
		{"hand-over with the marker, cut before its result", func() []string {
			return []string{line("user", text("hi"), ""), line("assistant", handOver(q), "toolUse")}
		}, true},
		{"hand-over with the marker and its result", func() []string {
			return []string{line("assistant", handOver(q), "toolUse"), line("toolResult", text("out"), "")}
		}, true},
		{"hand-over without the marker", func() []string {
			return []string{line("assistant", handOver("Let me look."), "toolUse"), line("toolResult", text("out"), "")}
		}, false},
		{"hand-over, then the run's last reply", func() []string {
			return []string{line("assistant", handOver(q), "toolUse"), line("toolResult", text("out"), ""), line("assistant", text("Done."), "stop")}
		}, false},
		{"thinking does not count", func() []string {
			return []string{line("assistant", []any{map[string]any{"type": "thinking", "thinking": ":input_needed:"}, map[string]any{"type": "text", "text": "Done."}}, "stop")}
		}, false},
		{"string content", func() []string { return []string{line("assistant", "Pick:\n:input_needed:", "stop")} }, true},
		// What a real reply's text holds around the marker (§16): line
		// ends, spaces and blank lines after it, JavaScript's whitespace.
		{"CRLF and trailing blank lines", func() []string {
			return []string{line("assistant", text("Which one?\r\n\r\n  :input_needed:  \r\n\r\n"), "stop")}
		}, true},
		{"trailing tabs, NBSP and BOM", func() []string {
			return []string{line("assistant", text("Which one?\n\t:input_needed:\u00a0\ufeff\n \n"), "stop")}
		}, true},
		{"a lone CR does not split", func() []string { return []string{line("assistant", text("Which one?\r:input_needed:"), "stop")} }, false},
		{"U+0085 is not whitespace", func() []string { return []string{line("assistant", text("Which one?\n:input_needed:\u0085"), "stop")} }, false},
		{"inside a closed code fence", func() []string {
			return []string{line("assistant", text("Use this:\n```\n:input_needed:\n```\n"), "stop")}
		}, false},
		{"after a code fence that mentions it", func() []string {
			return []string{line("assistant", text("```\nend with :input_needed:\n```\nWhich one?\n:input_needed:"), "stop")}
		}, true},
		{"quoted", func() []string { return []string{line("assistant", text("Write:\n> :input_needed:"), "stop")} }, false},
		{"inline code", func() []string { return []string{line("assistant", text("Write `:input_needed:`"), "stop")} }, false},
		{"bold", func() []string { return []string{line("assistant", text("Which one?\n**:input_needed:**"), "stop")} }, false},
		{"upper case", func() []string { return []string{line("assistant", text("Which one?\n:INPUT_NEEDED:"), "stop")} }, false},
		// The text parts are joined with a newline; other parts do not count.
		{"the marker in a text part of its own", func() []string {
			return []string{line("assistant", []any{map[string]any{"type": "text", "text": "Which one?"}, map[string]any{"type": "text", "text": ":input_needed:"}}, "stop")}
		}, true},
		{"a text part after the marker's", func() []string {
			return []string{line("assistant", []any{map[string]any{"type": "text", "text": "Which one?\n:input_needed:"}, map[string]any{"type": "text", "text": "More."}}, "stop")}
		}, false},
		{"an empty text part after the marker's", func() []string {
			return []string{line("assistant", []any{map[string]any{"type": "text", "text": "Which one?\n:input_needed:"}, map[string]any{"type": "text", "text": ""}, map[string]any{"type": "text"}}, "stop")}
		}, true},
		{"thinking after the text", func() []string {
			return []string{line("assistant", []any{map[string]any{"type": "text", "text": q}, map[string]any{"type": "thinking", "thinking": "done?"}}, "stop")}
		}, true},
		{"an error reply after a hand-over with the marker", func() []string {
			return []string{line("assistant", handOver(q), "toolUse"), line("toolResult", text("out"), ""), line("assistant", []any{}, "error")}
		}, false},
		// Entries that are not messages are passed over: a compaction, a
		// branch summary, an extension's message or state, a label, a
		// retry's context edit, a model change.
		{"entries that are not messages", func() []string {
			ls := []string{line("assistant", text(q), "stop")}
			for _, e := range []map[string]any{
				{"type": "compaction", "summary": "s", "firstKeptEntryId": "e1", "tokensBefore": 9},
				{"type": "branch_summary", "fromId": "e1", "summary": "s"},
				{"type": "custom_message", "customType": "note", "content": "Use Bun.", "display": true},
				{"type": "custom", "customType": "state", "data": map[string]any{"role": "user"}},
				{"type": "label", "targetId": "e1", "label": "here"},
				{"type": "context_edit", "targetId": "e1", "replacement": nil},
				{"type": "model_change", "provider": "p", "modelId": "m"},
			} {
				id++
				e["id"], e["parentId"] = fmt.Sprintf("e%d", id), fmt.Sprintf("e%d", id-1)
				b, _ := json.Marshal(e)
				ls = append(ls, string(b))
			}
			return ls
		}, true},
		{"a bash run after the question", func() []string {
			return []string{line("assistant", text(q), "stop"), line("bashExecution", nil, "")}
		}, true},
		{"answered with string content", func() []string {
			return []string{line("assistant", text(q), "stop"), line("user", "Use Bun.", "")}
		}, false},
	}
	branches := make([][]json.RawMessage, len(vectors))
	for i, v := range vectors {
		id = 0
		lines := v.build()
		tree := session.NewTree()
		for _, l := range lines {
			e, err := session.ParseLine([]byte(l))
			if err != nil {
				t.Fatalf("%s: %v", v.name, err)
			}
			tree.Add(e)
			branches[i] = append(branches[i], json.RawMessage(l))
		}
		if got, _ := tree.Blocked(); got != v.want {
			t.Errorf("%s: pane/session says %v, want %v", v.name, got, v.want)
		}
	}

	_, path := writtenProbe(t)
	in, _ := json.Marshal(branches)
	cmd := exec.Command(node(t), "testdata/branches.mjs", "file://"+path)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	cmd.Stdin = bytes.NewReader(in)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("branches.mjs: %v\n%s", err, stderr.String())
	}
	var got []bool
	if err := json.Unmarshal(out, &got); err != nil || len(got) != len(vectors) {
		t.Fatalf("branches.mjs printed %q (%v)", out, err)
	}
	for i, v := range vectors {
		if got[i] != v.want {
			t.Errorf("%s: the probe says %v, want %v", v.name, got[i], v.want)
		}
	}
}
