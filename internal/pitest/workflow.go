package pitest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/herdr-pi/herdr-pi/pane/session"
)

// Helpers for tests that drive a workflow owner: a Pi running the workflow
// engine (pi-extensible-workflows), its /workflow menu and the session
// files its agents write.

// Keys the menu takes.
const (
	KeyDown  = "\x1b[B"
	KeyEnter = "\r"
	KeyEsc   = "\x1b"
)

// AgentActions goes to the action list of the agent labelled label in the
// run of workflow flow, from wherever Pi is (its editor, or any screen of
// the /workflow menu, which may reopen by itself after an action), and
// returns the screen. The run is always entered from the list of runs, so
// what it shows is read afresh.
func AgentActions(t testing.TB, tm *Term, flow, label string, timeout time.Duration) string {
	t.Helper()
	fresh := false // entered the run from the list in this call
	typed := 0     // times /workflow was typed
	for i := 0; ; i++ {
		if i == 20 {
			t.Fatalf("could not reach the agent's actions:\n%s", tm.Screen())
		}
		s := tm.Screen()
		hint := MenuHint(s)
		switch {
		case !fresh && (strings.HasPrefix(hint, "↑/k/↓/j tree") || strings.HasPrefix(hint, "↑/k/↓/j actions")):
			tm.send(t, KeyEsc) // back towards the list of runs
		case strings.Contains(s, "Agent actions") && strings.HasPrefix(hint, "↑/k/↓/j actions"):
			return s
		case strings.HasPrefix(hint, "↑/k/↓/j actions"): // another action list
			tm.send(t, KeyEsc)
		case strings.HasPrefix(hint, "↑/k/↓/j tree") && selected(s, label):
			tm.send(t, KeyEnter)
		case strings.HasPrefix(hint, "↑/k/↓/j tree"):
			at := cursor(s)
			tm.send(t, KeyDown)
			tm.WaitFor(t, "the cursor to move", timeout, func(x string) bool { return cursor(x) != at })
			continue
		case strings.Contains(hint, "↑↓ navigate") && strings.Contains(s, flow):
			tm.send(t, KeyEnter) // the run, first in the list
			fresh = true
		case hint == "" && EditorShown(s) && typed < 3:
			// The command is typed again when no menu followed while the
			// editor stayed (a loaded machine has lost the Enter).
			tm.Type(t, "/workflow")
			typed++
			if !tm.await(15*time.Second, func(x string) bool { return MenuHint(x) != "" || !EditorShown(x) }) {
				continue
			}
		default:
			// Between screens — or caught mid-redraw, the editor not yet
			// drawn: wait for a menu, or for the editor to type at (a CI
			// run waited three minutes for a menu nobody had asked for).
			tm.WaitFor(t, fmt.Sprintf("a menu or the editor (/workflow typed %d times)", typed), timeout, func(x string) bool {
				return MenuHint(x) != "" || EditorShown(x) && typed < 3
			})
			continue
		}
		// Every step leads to another menu screen; the editor may flash
		// in between.
		tm.WaitFor(t, "the menu to change", timeout, func(x string) bool { h := MenuHint(x); return h != "" && h != hint })
	}
}

// await polls the screen every 20 ms until cond holds (true) or timeout
// passes (false).
func (tm *Term) await(timeout time.Duration, cond func(screen string) bool) bool {
	for deadline := time.Now().Add(timeout); ; time.Sleep(20 * time.Millisecond) {
		if cond(tm.Screen()) {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
	}
}

func (tm *Term) send(t testing.TB, keys string) {
	t.Helper()
	if err := tm.Send(keys); err != nil {
		t.Fatal(err)
	}
}

// EditorShown: Pi's editor (one input line between two rules) is on
// screen; a menu takes that place with many lines.
func EditorShown(screen string) bool {
	last := -10
	for i, l := range strings.Split(screen, "\n") {
		if strings.HasPrefix(l, "────────") {
			if i-last == 2 {
				return true
			}
			last = i
		}
	}
	return false
}

// MenuHint is the key hint line of the menu on screen ("" when none): the
// line naming escape/ctrl+c, which no spinner touches.
func MenuHint(screen string) string {
	hint := ""
	for _, l := range strings.Split(screen, "\n") {
		if strings.Contains(l, "escape/ctrl+c") {
			hint = strings.TrimSpace(l)
		}
	}
	return hint
}

// cursor is the words of the tree's cursor line (no spinner, no marks).
func cursor(screen string) string {
	for _, l := range strings.Split(screen, "\n") {
		if left, _, _ := strings.Cut(l, "|"); strings.HasPrefix(strings.TrimSpace(left), "→") {
			return strings.Join(strings.FieldsFunc(left, func(r rune) bool { return !unicode.IsLetter(r) }), " ")
		}
	}
	return ""
}

// selected: the tree's cursor line names label.
func selected(screen, label string) bool {
	for _, l := range strings.Split(screen, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "→") && strings.Contains(strings.SplitN(l, "|", 2)[0], label) {
			return true
		}
	}
	return false
}

// ActionList is the agent action list on the screen (the lines after
// "Agent actions", right of the tree).
func ActionList(screen string) []string {
	var out []string
	in := false
	for _, l := range strings.Split(screen, "\n") {
		_, right, ok := strings.Cut(l, "|")
		if !ok {
			if in {
				break
			}
			continue
		}
		right = strings.TrimSpace(right)
		if right == "Agent actions" {
			in = true
			continue
		}
		if in && right != "" {
			out = append(out, strings.TrimSpace(strings.TrimPrefix(right, "→")))
		}
	}
	return out
}

// Message is one message of a Pi session file, its text parts joined and
// its tool calls named.
type Message struct {
	Role       string
	StopReason string
	Text       string
	ToolCalls  []string
}

// Transcript reads the messages of a Pi session file, in order.
func Transcript(t testing.TB, path string) []Message {
	t.Helper()
	var out []Message
	for _, line := range sessionLines(t, path) {
		var e struct {
			Type    string `json:"type"`
			Message struct {
				Role       string          `json:"role"`
				StopReason string          `json:"stopReason"`
				Content    json.RawMessage `json:"content"`
			} `json:"message"`
		}
		if json.Unmarshal(line, &e) != nil || e.Type != "message" {
			continue
		}
		x := Message{Role: e.Message.Role, StopReason: e.Message.StopReason}
		var parts []struct{ Type, Text, Name string }
		if json.Unmarshal(e.Message.Content, &parts) == nil {
			for _, p := range parts {
				switch p.Type {
				case "text":
					x.Text += p.Text
				case "toolCall":
					x.ToolCalls = append(x.ToolCalls, p.Name)
				}
			}
		} else {
			_ = json.Unmarshal(e.Message.Content, &x.Text)
		}
		out = append(out, x)
	}
	return out
}

// sessionLines are the lines of a Pi session file (one JSON entry each).
func sessionLines(t testing.TB, path string) [][]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Split(b, []byte("\n"))
}

// SessionTree reads a Pi session file into the tree herdr-pi's session
// reader builds, for asking what its current branch waits for.
func SessionTree(t testing.TB, path string) *session.Tree {
	t.Helper()
	tr := session.NewTree()
	for _, l := range sessionLines(t, path) {
		if e, err := session.ParseLine(l); err == nil {
			tr.Add(e)
		}
	}
	return tr
}

// ToolTiming is one of the workflow engine's tool-timing session entries
// (custom entries of type "pi-workflows:tool-timing", one per finished
// tool call of a workflow agent).
type ToolTiming struct {
	ToolCallID  string `json:"toolCallId"`
	ToolName    string `json:"toolName"`
	StartedAt   int64  `json:"startedAt"`
	CompletedAt int64  `json:"completedAt"`
	DurationMs  int64  `json:"durationMs"`
	IsError     bool   `json:"isError"`
}

// ToolTimings reads the tool-timing entries of a Pi session file, in order.
func ToolTimings(t testing.TB, path string) []ToolTiming {
	t.Helper()
	var out []ToolTiming
	for _, line := range sessionLines(t, path) {
		var e struct {
			Type       string     `json:"type"`
			CustomType string     `json:"customType"`
			Data       ToolTiming `json:"data"`
		}
		if json.Unmarshal(line, &e) == nil && e.Type == "custom" && e.CustomType == "pi-workflows:tool-timing" {
			out = append(out, e.Data)
		}
	}
	return out
}
