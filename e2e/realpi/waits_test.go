package realpi

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/herdr-pi/herdr-pi/bridge/control"
	"github.com/herdr-pi/herdr-pi/internal/fakellm"
	"github.com/herdr-pi/herdr-pi/internal/pitest"
)

// With a real Pi: Pi's reply asks, then an extension says on Pi's bus that
// it waits for the person (pi:waiting-for-user-input, as plan-md does)
// and asks in one of Pi's dialogs. The wait is told by itself, once,
// though the pane was blocked already; its dialog is its question, not
// told again while it is open.
func TestPiWaitThatOpensWhileBlockedIsToldByItself(t *testing.T) {
	w, seen, m, tm := startWaiterPi(t, fakellm.Fixed(fakellm.Reply{Text: question + "\n\n:input_needed:"}))

	tm.Type(t, "hello")
	w.waitEvent(t, control.EvAgentSettled, 30*time.Second)
	seen.await(t, "idle working blocked", "input-needed("+question+")")

	tm.Type(t, "/wait-on r1")
	w.waitEvent(t, control.EvWaitingForInput, 10*time.Second)
	seen.await(t, "idle working blocked", "input-needed("+question+"),input-needed")
	tm.Type(t, "/ask-confirm")
	w.waitEvent(t, control.EvUIPromptStart, 10*time.Second)
	tm.WaitText(t, "Deploy now?", 5*time.Second)
	time.Sleep(500 * time.Millisecond) // nothing more comes
	seen.expect(t, "idle working blocked", "input-needed("+question+"),input-needed")
	expectReasons(t, m, question, "wait:"+control.WaitKey("test-ext", "r1"), "Deploy now?")
}

// With a real Pi and a stand-in for pi-herdr-integration, which mirrors
// the reply's question on herdr:blocked before the probe names it: one
// notification for the question, and a wait that opens under it is told
// by itself, once; its dialog is not told again.
func TestPiWaitUnderAMirroredQuestionIsTold(t *testing.T) {
	pi := pitest.Current(t)
	llm := fakellm.Start(fakellm.Fixed(fakellm.Reply{Text: question + "\n\n:input_needed:"}))
	defer llm.Close()
	a := pitest.NewAgent(t, pi, llm.BaseURL())
	w := newWrapper(t)
	seen, _ := w.machine(t)
	var exts []string
	for _, f := range []string{"testdata/mirror.mjs", "testdata/waiter.mjs"} {
		ext, err := filepath.Abs(f)
		if err != nil {
			t.Fatal(err)
		}
		exts = append(exts, "-e", ext)
	}
	tm := startPi(t, a, w, herdrEnv, exts...)
	editorReady(t, tm, w)

	tm.Type(t, "hello")
	w.waitEvent(t, control.EvAgentSettled, 30*time.Second)
	seen.await(t, "idle working blocked", "input-needed")
	tm.Type(t, "/wait-on r1")
	w.waitEvent(t, control.EvWaitingForInput, 10*time.Second)
	tm.Type(t, "/ask-confirm")
	w.waitEvent(t, control.EvUIPromptStart, 10*time.Second)
	tm.WaitText(t, "Deploy now?", 5*time.Second)
	time.Sleep(500 * time.Millisecond) // nothing more comes
	seen.expect(t, "idle working blocked", "input-needed,input-needed")
}
