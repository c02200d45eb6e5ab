package herdr_test

import (
	"context"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/herdr-pi/herdr-pi/bridge/herdr"
	"github.com/herdr-pi/herdr-pi/internal/herdrtest"
)

// These pin promises of the Presence that no other test could fail on
// (found by hand mutation).

// A report Herdr refused once, followed by one it took: Health no longer
// says it rejects the reports.
func TestHealthForgetsARejectionOnceAReportIsTaken(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := herdrtest.StartInBubble(t)
		p := herdr.StartPresence(inMemory(presenceConfig(s, nil), s))
		defer p.Close(context.Background())
		time.Sleep(time.Second)
		synctest.Wait()
		s.SetFault(herdrtest.Fault{Kind: herdrtest.FaultReply, Methods: []string{"pane.report_agent"}, Count: 1,
			Reply: map[string]any{"error": map[string]any{"code": "invalid_agent", "message": "agent label must not be empty"}}})
		p.Report("working", "")
		time.Sleep(time.Second)
		synctest.Wait()
		if h := p.Health(); !strings.HasPrefix(h, "Herdr rejects the reports") {
			t.Fatalf("after a refusal: Health %q; the fault did not take, the test proves nothing", h)
		}
		p.Report("blocked", "")
		time.Sleep(time.Second)
		synctest.Wait()
		if h, want := p.Health(), `reporting to pane w1:p1 as custom:herdr-pi (agent "pi")`; h != want {
			t.Errorf("after a report Herdr took: Health %q, want %q", h, want)
		}
	})
}

// ping is safe to repeat, so a connection Herdr closes without answering
// is tried once more (§1.4): the protocol, and with it the resume
// command, is not lost to one dropped connection.
func TestPingIsRetriedOnce(t *testing.T) {
	s := herdrtest.Start(t, herdrtest.Options{Protocol: herdrtest.Protocol22})
	s.SetFault(herdrtest.Fault{Kind: herdrtest.FaultClose, Methods: []string{"ping"}, Count: 1})
	pong, err := herdr.NewClient(s.SocketPath()).Ping(context.Background())
	if err != nil || pong.Protocol != herdrtest.Protocol22 {
		t.Fatalf("ping after one dropped connection: %+v, %v", pong, err)
	}
}
