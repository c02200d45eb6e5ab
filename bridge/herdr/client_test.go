package herdr_test

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/herdr-pi/herdr-pi/bridge/herdr"
	"github.com/herdr-pi/herdr-pi/internal/herdrtest"
)

func TestPingAndProtocol(t *testing.T) {
	s := herdrtest.Start(t)
	c := herdr.NewClient(s.SocketPath())
	p, err := c.Ping(context.Background())
	if err != nil || p.Protocol != 20 || p.Version != "0.8.0" || p.Capabilities == nil {
		t.Fatalf("ping: %+v, %v", p, err)
	}
	// Herdr 0.9's protocol 22 is known too.
	s.SetProtocol(22)
	if p, err = c.Ping(context.Background()); err != nil || p.Protocol != 22 {
		t.Fatalf("protocol 22: %+v, %v", p, err)
	}
	s.SetProtocol(23)
	p, err = c.Ping(context.Background())
	var pm *herdr.ProtocolMismatchError
	if !errors.As(err, &pm) || pm.Got != 23 || pm.Expected != 22 || p.Protocol != 23 {
		t.Fatalf("mismatch: %+v, %v", p, err)
	}
	if msg := err.Error(); !strings.Contains(msg, s.SocketPath()) || !strings.Contains(msg, "protocol 23") || !strings.Contains(msg, "upgrade herdr-pi") {
		t.Errorf("mismatch message %q", msg)
	}
	s.SetProtocol(21)
	if _, err = c.Ping(context.Background()); !errors.As(err, &pm) || pm.Expected != 20 && pm.Expected != 22 {
		t.Fatalf("protocol 21: %v", err)
	}
}

func TestMethodsAgainstTheFake(t *testing.T) {
	s := herdrtest.Start(t, herdrtest.Options{Delivery: "herdr"})
	c := herdr.NewClient(s.SocketPath())
	ctx := context.Background()
	pane := s.PaneID()

	if err := c.ReportAgent(ctx, herdr.AgentReport{PaneID: pane, Source: "custom:t", Agent: "pi", State: "blocked", Message: "approve", Seq: 7}); err != nil {
		t.Fatal(err)
	}
	if st := s.Pane(pane); st.Status != "blocked" || st.Agent != "pi" || st.Source != "custom:t" {
		t.Errorf("after report: %+v", st)
	}
	pi, err := c.PaneGet(ctx, pane)
	if err != nil || pi.AgentStatus != "blocked" || pi.Agent != "pi" || pi.TabID != "w1:t1" {
		t.Errorf("PaneGet: %+v, %v", pi, err)
	}
	ai, err := c.AgentGet(ctx, pane)
	if err != nil || ai.AgentStatus != "blocked" || ai.PaneID != pane {
		t.Errorf("AgentGet: %+v, %v", ai, err)
	}
	if err := c.ReleaseAgent(ctx, herdr.AgentRelease{PaneID: pane, Source: "custom:t", Agent: "pi", Seq: 8}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.AgentGet(ctx, pane); !isCode(err, "agent_not_found") {
		t.Errorf("AgentGet after release: %v", err)
	}

	nr, err := c.ShowNotification(ctx, herdr.Notification{Title: "pi needs you", Body: "approve", Sound: "request", Position: "top-right"})
	if err != nil || !nr.Shown || nr.Reason != "shown" {
		t.Errorf("ShowNotification: %+v, %v", nr, err)
	}
	nr, err = c.ShowNotification(ctx, herdr.Notification{Title: "again"})
	if err != nil || nr.Shown || nr.Reason != "rate_limited" {
		t.Errorf("second ShowNotification: %+v, %v", nr, err)
	}
	if _, err := c.ShowNotification(ctx, herdr.Notification{Title: "  "}); !isCode(err, "invalid_params") {
		t.Errorf("empty title: %v", err)
	}

	wc, err := c.WorkspaceCreate(ctx, herdr.NewPlace{Cwd: "/repo", Label: "api", Env: map[string]string{"X": "1"}})
	if err != nil || wc.Workspace.WorkspaceID != "w2" || wc.RootPane.PaneID != "w2:p1" || wc.Tab.TabID != "w2:t1" {
		t.Fatalf("WorkspaceCreate: %+v, %v", wc, err)
	}
	tab, root, err := c.TabCreate(ctx, "w2", herdr.NewPlace{Label: "review"})
	if err != nil || tab.TabID != "w2:t2" || root.PaneID != "w2:p2" || tab.Label != "review" {
		t.Fatalf("TabCreate: %+v %+v %v", tab, root, err)
	}
	if ti, err := c.TabRename(ctx, "w2:t2", "done"); err != nil || ti.Label != "done" {
		t.Errorf("TabRename: %+v %v", ti, err)
	}
	np, err := c.PaneSplit(ctx, herdr.Split{TargetPaneID: "w2:p2", Direction: "down"})
	if err != nil || np.PaneID != "w2:p3" || np.TabID != "w2:t2" {
		t.Fatalf("PaneSplit: %+v %v", np, err)
	}
	if err := c.PaneSendInput(ctx, np.PaneID, "npm test", "Enter"); err != nil {
		t.Fatal(err)
	}
	if in := s.Inputs(); len(in) != 1 || in[0].Text != "npm test" || in[0].Keys[0] != "Enter" {
		t.Errorf("inputs %+v", in)
	}
	if err := c.PaneSendInput(ctx, np.PaneID, "", "NoSuchKey"); !isCode(err, "invalid_key") {
		t.Errorf("bad key: %v", err)
	}
	pid := 4242
	s.SetProcessInfo(np.PaneID, herdrtest.ProcessInfo{ShellPID: &pid, Processes: []herdrtest.Process{{PID: 4300, Name: "pi", Argv: []string{"pi"}}}})
	proc, err := c.PaneProcessInfo(ctx, np.PaneID)
	if err != nil || proc.ShellPID == nil || *proc.ShellPID != 4242 || len(proc.ForegroundProcesses) != 1 || proc.ForegroundProcesses[0].Name != "pi" {
		t.Errorf("PaneProcessInfo: %+v %v", proc, err)
	}
	lay, err := c.PaneLayout(ctx, np.PaneID)
	if err != nil || lay.TabID != "w2:t2" || len(lay.Panes) != 2 {
		t.Errorf("PaneLayout: %+v %v", lay, err)
	}
	if err := c.PaneClose(ctx, np.PaneID); err != nil {
		t.Fatal(err)
	}
	if err := c.TabClose(ctx, "w2:t2"); err != nil {
		t.Fatal(err)
	}
	list, err := c.WorkspaceList(ctx)
	if err != nil || len(list) != 2 {
		t.Fatalf("WorkspaceList: %+v %v", list, err)
	}
	if err := c.WorkspaceClose(ctx, "w2"); err != nil {
		t.Fatal(err)
	}
	if err := c.WorkspaceClose(ctx, "w2"); !isCode(err, "workspace_not_found") {
		t.Errorf("closing twice: %v", err)
	}
}

func isCode(err error, code string) bool {
	var he *herdr.Error
	return errors.As(err, &he) && he.Code == code
}

func TestHerdrErrorsNameSocketAndWayOut(t *testing.T) {
	s := herdrtest.Start(t)
	c := herdr.NewClient(s.SocketPath())
	err := c.ReportAgent(context.Background(), herdr.AgentReport{PaneID: "w1:p9", Source: "custom:t", Agent: "pi", State: "idle"})
	var he *herdr.Error
	if !errors.As(err, &he) || he.Code != "pane_not_found" || he.Method != "pane.report_agent" {
		t.Fatalf("err %v", err)
	}
	msg := err.Error()
	for _, want := range []string{s.SocketPath(), "pane w1:p9 not found", "open a new pane"} {
		if !strings.Contains(msg, want) {
			t.Errorf("%q lacks %q", msg, want)
		}
	}
	if herdr.KindOf(err) != "herdr-error:pane_not_found" {
		t.Errorf("kind %q", herdr.KindOf(err))
	}
}

// TestTransportFailures covers each way the socket can fail: what kind it
// is, that the message names the socket and a way out, and that a failure
// is retried once. How long a hung Herdr holds a call is
// TestAHungHerdrHoldsACallForBothDeadlines's.
func TestTransportFailures(t *testing.T) {
	s := herdrtest.Start(t)
	dir, err := os.MkdirTemp("", "hp")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	regular := filepath.Join(dir, "plain-file")
	os.WriteFile(regular, nil, 0o600)

	type tc struct {
		name   string
		socket string
		fault  herdrtest.Fault
		crash  bool
		kind   herdr.FailureKind
		words  []string
	}
	for _, c := range []tc{
		{name: "absent", socket: filepath.Join(dir, "nope.sock"), kind: herdr.FailNoSocket, words: []string{"does not exist", "start Herdr"}},
		{name: "not a socket", socket: regular, kind: herdr.FailNotSocket, words: []string{"not a socket", "HERDR_SOCKET_PATH"}},
		{name: "too long", socket: filepath.Join(dir, strings.Repeat("x", 120)+".sock"), kind: herdr.FailTooLong, words: []string{"longer than the 107", "HERDR_SOCKET_PATH"}},
		{name: "dangling", crash: true, kind: herdr.FailRefused, words: []string{"refuses connections", "restart Herdr"}},
		{name: "hang", fault: herdrtest.Fault{Kind: herdrtest.FaultHang}, kind: herdr.FailTimeout, words: []string{"no reply to pane.report_agent within 1.5s", "doctor"}},
		{name: "garbage", fault: herdrtest.Fault{Kind: herdrtest.FaultGarbage}, kind: herdr.FailGarbage, words: []string{"not Herdr's protocol", "<html>"}},
		{name: "close", fault: herdrtest.Fault{Kind: herdrtest.FaultClose}, kind: herdr.FailClosed, words: []string{"closed the connection without answering"}},
		{name: "close mid-line", fault: herdrtest.Fault{Kind: herdrtest.FaultCloseMidLine}, kind: herdr.FailClosed, words: []string{"without answering"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			sock := c.socket
			if sock == "" {
				sock = s.SocketPath()
			}
			s.SetFault(c.fault)
			if c.crash {
				s.Crash()
				defer s.Restart()
			}
			before := len(s.Requests())
			err := herdr.NewClient(sock).ReportAgent(context.Background(), herdr.AgentReport{PaneID: s.PaneID(), Source: "custom:t", Agent: "pi", State: "working", Seq: uint64(time.Now().UnixMicro())})
			s.SetFault(herdrtest.Fault{})
			if herdr.KindOf(err) != c.kind {
				t.Fatalf("kind %q, want %q (err %v)", herdr.KindOf(err), c.kind, err)
			}
			for _, w := range append(c.words, sock) {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%q lacks %q", err, w)
				}
			}
			// Transport failures are retried once with the identical line.
			if sock == s.SocketPath() && !c.crash {
				reqs := s.Requests()[before:]
				if len(reqs) != 2 || reqs[0].Line != reqs[1].Line {
					t.Errorf("%d attempts, want 2 identical ones", len(reqs))
				}
			}
		})
	}
}

// A hung Herdr holds a call for the first attempt's 500 ms and the
// second's 1500 ms, and no longer.
func TestAHungHerdrHoldsACallForBothDeadlines(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := herdrtest.StartInBubble(t)
		s.SetFault(herdrtest.Fault{Kind: herdrtest.FaultHang})
		start := time.Now()
		err := (&herdr.Client{Socket: s.SocketPath(), Dial: s.Dial}).ReportAgent(context.Background(), herdr.AgentReport{PaneID: s.PaneID(), Source: "custom:t", Agent: "pi", State: "idle", Seq: 1})
		if took := time.Since(start); herdr.KindOf(err) != herdr.FailTimeout || took != 2*time.Second {
			t.Errorf("%v after %v, want a timeout after 500ms + 1500ms", err, took)
		}
	})
}

func TestRetryRecoversWithinTheSecondAttempt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := herdrtest.StartInBubble(t)
		s.SetFault(herdrtest.Fault{Kind: herdrtest.FaultHang, Count: 1})
		start := time.Now()
		err := (&herdr.Client{Socket: s.SocketPath(), Dial: s.Dial}).ReportAgent(context.Background(), herdr.AgentReport{PaneID: s.PaneID(), Source: "custom:t", Agent: "pi", State: "idle", Seq: 1})
		if err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d != 500*time.Millisecond {
			t.Errorf("took %v, want the 500ms first deadline and an answer to the second attempt at once", d)
		}
		if st := s.Pane(s.PaneID()); st.Status != "idle" {
			t.Errorf("pane %+v", st)
		}
	})
}

func TestCancelEndsACallAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := herdrtest.StartInBubble(t)
		s.SetFault(herdrtest.Fault{Kind: herdrtest.FaultHang})
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(50*time.Millisecond, cancel)
		start := time.Now()
		_, err := (&herdr.Client{Socket: s.SocketPath(), Dial: s.Dial}).Ping(ctx)
		if herdr.KindOf(err) != herdr.FailCanceled || time.Since(start) != 50*time.Millisecond {
			t.Errorf("after %v: %v, want canceled at 50ms", time.Since(start), err)
		}
	})
}

func TestInMemoryDial(t *testing.T) {
	s := herdrtest.Start(t)
	c := &herdr.Client{Socket: s.SocketPath(), Dial: s.Dial}
	if _, err := c.Ping(context.Background()); err != nil {
		t.Fatal(err)
	}
	var _ func(context.Context, string) (net.Conn, error) = s.Dial
}
