package notify

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// panickyHerdr panics on its first toast and shows the others.
type panickyHerdr struct {
	mu    sync.Mutex
	shown []string
	calls int
}

func (h *panickyHerdr) ShowNotification(_ context.Context, t HerdrToast) (HerdrResult, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.calls++
	if h.calls == 1 {
		panic("toast boom")
	}
	h.shown = append(h.shown, t.Title)
	return HerdrResult{Shown: true, Reason: ReasonShown}, nil
}

// A panic in a channel's send runs on the channel's goroutine, where
// nothing of the wrapper's would catch it; escaping, it killed the wrapper
// with the terminal raw (the test binary dies instead of failing here).
// It costs that one notification, counted as a failure and logged with
// its stack; the channel delivers the next, and Close returns.
func TestAPanickingSendCostsOneNotification(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := &panickyHerdr{}
		var mu sync.Mutex
		var logs []string
		n := Start(Options{Herdr: h, Logf: func(f string, a ...any) {
			mu.Lock()
			logs = append(logs, fmt.Sprintf(f, a...))
			mu.Unlock()
		}})
		n.Notify(Event{Kind: InputNeeded, Key: "a"})
		synctest.Wait()
		time.Sleep(herdrPace)
		n.Notify(Event{Kind: Finished, Key: "b"})
		synctest.Wait()
		n.Close(context.Background())
		h.mu.Lock()
		shown := h.shown
		h.mu.Unlock()
		if len(shown) != 1 || !strings.Contains(shown[0], "finished") {
			t.Errorf("shown %q, want the second notification only", shown)
		}
		if st := n.Status()[0]; st.Failed != 1 || st.Sent != 1 {
			t.Errorf("status %+v, want 1 sent and 1 failed", st)
		}
		mu.Lock()
		defer mu.Unlock()
		if all := strings.Join(logs, "\n"); !strings.Contains(all, "notify: the herdr channel's send panicked (this notification is lost") ||
			!strings.Contains(all, "toast boom") {
			t.Errorf("no log line for the panic; logs:\n%s", all)
		}
	})
}
