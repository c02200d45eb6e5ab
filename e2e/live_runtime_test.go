package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/herdr-pi/herdr-pi/internal/fakellm"
	"github.com/herdr-pi/herdr-pi/internal/pitest"
)

// Seed 001: "A live handoff has … an available originating Pi runtime."
// The owner's Pi was started from an entry that is gone by the time of the
// handoff (its installation removed or moved while it ran), so a pane
// could not start the Pi the owner runs. `herdr-pi open` is refused at
// once, before the turn boundary, exit 1, saying why; nothing is cut,
// suspended or opened, and the runtime directory is as before. The
// owner's /workflow menu gets the same refusal, shown in the owner. The
// agent's turn goes on locally as if nobody had asked: no continuation,
// and the workflow completes with the agent's own reply.
func TestLiveHandoffRefusedWithoutTheOwnersPi(t *testing.T) {
	entry := filepath.Join(t.TempDir(), "pi")
	if err := os.Symlink(pitest.Current(t).Bin, entry); err != nil {
		t.Fatal(err)
	}
	lr := newLiveRig(t, func(lr *liveRig) { lr.ownerPi = entry })
	lr.startOwner()
	st := lr.run()
	session := st.sessionFile(t, lvLabel)
	before := lvTranscript(t, session)
	files := lr.runtimeFiles()
	if err := os.Remove(entry); err != nil {
		t.Fatal(err)
	}

	holding := lvLabel + ": handing off at the end of this turn"
	ro := lr.start(t, lr.s, nil, st.ID, lvLabel, "--json")
	for deadline := time.Now().Add(lvLong); ; {
		if s := lr.owner.Screen(); strings.Contains(s, holding) {
			t.Fatalf("the owner took the order and holds it for the turn boundary, though no pane could start its Pi:\n%s", s)
		}
		select {
		case <-ro.done:
		case <-time.After(20 * time.Millisecond):
			if time.Now().After(deadline) {
				t.Fatalf("open still runs after %v:\n%s%s", lvLong, ro.out.String(), ro.errb.String())
			}
			continue
		}
		break
	}
	res := ro.wait(t)
	lines := strings.Split(strings.TrimSpace(res.stdout), "\n")
	var last struct {
		Format string `json:"format"`
		Event  string `json:"event"`
		Error  struct{ Code, Message string }
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &last); err != nil {
		t.Fatalf("open's last line %q: %v", lines[len(lines)-1], err)
	}
	validateJSON(t, docSchema(t, "open"), []byte(lines[len(lines)-1]))
	if res.code != 1 || !strings.Contains(res.stderr, "refused") || !strings.Contains(res.stderr, entry) || !strings.Contains(last.Error.Message, entry) {
		t.Fatalf("open: exit %d, want 1 and the refusal naming the owner's Pi entry %s\n%s%s", res.code, entry, res.stdout, res.stderr)
	}
	if m := lr.s.Methods(); slices.Contains(m, "pane.split") || slices.Contains(m, "tab.create") || slices.Contains(m, "workspace.create") || len(lr.s.Inputs()) > 0 {
		t.Fatalf("a refused handoff reached Herdr: %q", m)
	}
	lr.wantOnly(files)

	// The menu's live action is refused the same, in the owner's words.
	list := lvActionList(lvAgentActions(t, lr.owner))
	if lvCount(list, "Open live session in Herdr pane") != 1 {
		t.Fatalf("the running agent's actions: %q", list)
	}
	lvSend(t, lr.owner, lvEnter)
	lr.owner.WaitFor(t, "the menu's refusal", lvLong, func(s string) bool {
		if strings.Contains(s, holding) {
			t.Fatalf("the owner holds the menu's order for the turn boundary:\n%s", s)
		}
		return strings.Contains(s, "refused the handoff")
	})
	lr.leaveMenu()
	if after := lvTranscript(t, session); !slices.EqualFunc(after, before, func(a, b pitest.Message) bool {
		return a.Role == b.Role && a.StopReason == b.StopReason && a.Text == b.Text
	}) {
		t.Fatalf("the refused handoffs changed the agent's transcript:\nbefore %+v\nafter  %+v", before, after)
	}
	if m := lr.s.Methods(); slices.Contains(m, "pane.split") || len(lr.s.Inputs()) > 0 {
		t.Fatalf("a refused handoff reached Herdr: %q", m)
	}

	// The turn was never cut: the agent finishes it locally.
	lr.openGate()
	if got := lr.result(); got != "agent: finished locally" {
		t.Fatalf("the workflow's result is %q, want the agent's own reply", got)
	}
	if slices.ContainsFunc(lr.llm.Requests(), func(r fakellm.Request) bool { return strings.Contains(r.LastUser(), lvBackHome) }) {
		t.Fatal("the owner continued a turn no handoff took")
	}
}
